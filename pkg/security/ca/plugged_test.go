package ca_test

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/log/logtest"
	"github.com/meshplane/istiod/pkg/security/ca"
)

type testCA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
	keyPEM  []byte
}

func makeCA(t *testing.T, name string, parent *testCA, isCA bool) *testCA {
	t.Helper()
	key := ecKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{Organization: []string{name}},
		NotBefore:             epoch.Add(-time.Hour),
		NotAfter:              epoch.Add(5 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		IsCA:                  isCA,
		BasicConstraintsValid: true,
	}
	if !isCA {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	}
	signer, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, key.Public(), signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	kder, _ := x509.MarshalECPrivateKey(key)
	return &testCA{
		cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
	}
}

func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPluggedCAWithIntermediate(t *testing.T) {
	_ = logtest.Capture(t)
	root := makeCA(t, "root", nil, true)
	inter := makeCA(t, "intermediate", root, true)
	dir := t.TempDir()
	chainPEM := append(append([]byte{}, inter.certPEM...), root.certPEM...)
	writeFiles(t, dir, map[string][]byte{
		"ca-cert.pem": inter.certPEM, "ca-key.pem": inter.keyPEM, "root-cert.pem": root.certPEM, "cert-chain.pem": chainPEM,
	})
	client := fake.NewClientset()
	fc := clock.NewFake(epoch)
	c, err := ca.New(t.Context(), ca.Options{PluggedCertDir: dir, Store: secretStore(client), Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	if len(client.Actions()) != 0 {
		t.Fatalf("a plugged-in CA touched the Secret: %v", client.Actions())
	}
	if c.SelfSigned() || !bytes.Equal(c.RootCertPEM(), root.certPEM) || !bytes.Equal(c.CertChainPEM(), chainPEM) || !bytes.Equal(c.SigningCertPEM(), inter.certPEM) {
		t.Fatal("accessors of a plugged-in CA")
	}
	chain, err := c.Sign(csrPEM(t, ecKey(t), ""), []string{productpage}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// leaf, then cert-chain.pem's certificates, then root-cert.pem (Istio's response)
	want := []string{"", string(inter.certPEM), string(root.certPEM), string(root.certPEM)}
	if len(chain) != len(want) {
		t.Fatalf("chain has %d entries, want %d", len(chain), len(want))
	}
	for i := 1; i < len(want); i++ {
		if chain[i] != want[i] {
			t.Errorf("chain[%d] differs", i)
		}
	}
	leaf := parsePEMCert(t, chain[0])
	if leaf.Issuer.String() != "O=intermediate" || !bytes.Equal(leaf.AuthorityKeyId, inter.cert.SubjectKeyId) {
		t.Fatalf("issuer %q AKI %x", leaf.Issuer, leaf.AuthorityKeyId)
	}
	verify(t, leaf, c.RootCertPool(), fc.Now(), inter.cert)

	tc, err := c.ServingCert([]string{"istiod.istio-system.svc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tc.Certificate) != 3 || !bytes.Equal(tc.Certificate[1], inter.cert.Raw) || !tc.Leaf.NotAfter.Equal(inter.cert.NotAfter) {
		t.Fatalf("serving chain %d certs, NotAfter %v", len(tc.Certificate), tc.Leaf.NotAfter)
	}
	// a plugged-in CA never rotates, Run returns at once
	if changed, err := c.CheckRootRotation(t.Context()); changed || err != nil {
		t.Fatalf("CheckRootRotation = %v, %v", changed, err)
	}
	stop := make(chan struct{})
	c.Run(stop)
}

func TestPluggedCATLSSecretLayout(t *testing.T) {
	_ = logtest.Capture(t)
	root := makeCA(t, "root", nil, true)
	inter := makeCA(t, "intermediate", root, true)
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{"tls.crt": inter.certPEM, "tls.key": inter.keyPEM, "ca.crt": root.certPEM})
	c, err := ca.New(t.Context(), ca.Options{PluggedCertDir: dir, Clock: clock.NewFake(epoch)})
	if err != nil {
		t.Fatal(err)
	}
	chain, err := c.Sign(csrPEM(t, ecKey(t), ""), []string{productpage}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(chain) != 4 || chain[1] != string(inter.certPEM) || chain[2] != string(root.certPEM) || chain[3] != string(root.certPEM) {
		t.Fatalf("chain of %d", len(chain))
	}
}

func TestPluggedCARefusals(t *testing.T) {
	_ = logtest.Capture(t)
	root := makeCA(t, "root", nil, true)
	inter := makeCA(t, "intermediate", root, true)
	leafish := makeCA(t, "not-a-ca", root, false)
	other := makeCA(t, "other", nil, true)
	for name, tc := range map[string]struct {
		files map[string][]byte
		want  string
	}{
		"partial": {map[string][]byte{"ca-cert.pem": inter.certPEM, "ca-key.pem": inter.keyPEM}, "incomplete signing CA bundle detected"},
		"not a CA": {map[string][]byte{"ca-cert.pem": leafish.certPEM, "ca-key.pem": leafish.keyPEM, "root-cert.pem": root.certPEM, "cert-chain.pem": leafish.certPEM},
			"certificate is not authorized to sign other certificates"},
		"wrong root": {map[string][]byte{"ca-cert.pem": inter.certPEM, "ca-key.pem": inter.keyPEM, "root-cert.pem": other.certPEM, "cert-chain.pem": inter.certPEM},
			"cannot verify the cert"},
		"wrong key": {map[string][]byte{"ca-cert.pem": inter.certPEM, "ca-key.pem": other.keyPEM, "root-cert.pem": root.certPEM, "cert-chain.pem": inter.certPEM},
			"the cert does not match the key"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			_, err := ca.New(t.Context(), ca.Options{PluggedCertDir: dir, Clock: clock.NewFake(epoch), KeyType: ca.KeyECDSAP256})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestNoPluggedDirMeansSelfSigned(t *testing.T) {
	_ = logtest.Capture(t)
	c, _ := newECCA(t, ca.Options{PluggedCertDir: filepath.Join(t.TempDir(), "absent")})
	if !c.SelfSigned() {
		t.Fatal("want self-signed")
	}
	if ca.DefaultPluggedCertDir != "./etc/cacerts" {
		t.Fatal("ROOT_CA_DIR default")
	}
}
