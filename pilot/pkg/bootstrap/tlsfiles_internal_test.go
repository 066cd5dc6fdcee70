package bootstrap

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/meshplane/istiod/pkg/security/ca"
)

// selfSigned is a certificate that is its own CA, and its key, as PEM.
func selfSigned(t *testing.T, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "istiod"},
		DNSNames: []string{"istiod.istio-system.svc"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func writeFiles(t *testing.T, files map[string][]byte) {
	t.Helper()
	for p, b := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// The files come from the three flags when all are set, else from Istio's
// well-known mount points when those exist (the CA bundle in istiod/ca
// first, then beside the certificate).
func TestCustomTLSFiles(t *testing.T) {
	t.Chdir(t.TempDir())
	flags := TLSOptions{CertFile: "/f/tls.crt", KeyFile: "/f/tls.key", CaCertFile: "/f/ca.crt"}
	if c, k, ca, ok := customTLSFiles(flags); !ok || c != flags.CertFile || k != flags.KeyFile || ca != flags.CaCertFile {
		t.Errorf("flags: %q %q %q %v", c, k, ca, ok)
	}
	partial := TLSOptions{CertFile: "/f/tls.crt", KeyFile: "/f/tls.key"}
	if _, _, _, ok := customTLSFiles(partial); ok {
		t.Error("two flags of three and no well-known files: custom certificate")
	}
	writeFiles(t, map[string][]byte{wellKnownTLSCert: []byte("c"), wellKnownTLSKey: []byte("k")})
	if _, _, _, ok := customTLSFiles(partial); ok {
		t.Error("well-known certificate and key without a CA bundle: custom certificate")
	}
	writeFiles(t, map[string][]byte{wellKnownTLSCAOther: []byte("a")})
	if c, k, ca, ok := customTLSFiles(partial); !ok || c != wellKnownTLSCert || k != wellKnownTLSKey || ca != wellKnownTLSCAOther {
		t.Errorf("well-known with ca.crt: %q %q %q %v", c, k, ca, ok)
	}
	writeFiles(t, map[string][]byte{wellKnownTLSCA: []byte("r")})
	if _, _, ca, ok := customTLSFiles(TLSOptions{}); !ok || ca != wellKnownTLSCA {
		t.Errorf("well-known with root-cert.pem: %q %v", ca, ok)
	}
	if c, _, _, _ := customTLSFiles(flags); c != flags.CertFile {
		t.Error("the flags do not win over the well-known files")
	}
}

// A fileCert serves nothing until its files read and parse, keeps the last
// good certificate when they stop parsing, and calls its handlers when the
// CA bundle changes.
func TestFileCertReload(t *testing.T) {
	dir := t.TempDir()
	cert, key, caFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")
	f := newFileCert(cert, key, caFile)
	if f.loaded() || f.caBundle() != nil {
		t.Fatal("loaded without files")
	}
	if _, err := f.getCertificate(nil); err == nil || err.Error() != "cert not initialized" {
		t.Errorf("no files: %v", err)
	}
	calls := 0
	f.onCAChange(func() { calls++ })
	c1, k1 := selfSigned(t, 1)
	writeFiles(t, map[string][]byte{cert: c1, key: k1, caFile: c1})
	if err := f.reload(); err != nil {
		t.Fatal(err)
	}
	if got, err := f.getCertificate(nil); err != nil || got.Leaf.SerialNumber.Int64() != 1 || !bytes.Equal(f.caBundle(), c1) || calls != 1 {
		t.Errorf("loaded: %v %v ca=%v calls=%d", got, err, bytes.Equal(f.caBundle(), c1), calls)
	}
	if err := f.reload(); err != nil || calls != 1 {
		t.Errorf("unchanged files: %v, calls %d", err, calls)
	}
	// a key of another certificate: refused, the last good one stays
	_, k2 := selfSigned(t, 2)
	writeFiles(t, map[string][]byte{key: k2})
	if err := f.reload(); err == nil {
		t.Error("mismatched key accepted")
	}
	if got, _ := f.getCertificate(nil); got.Leaf.SerialNumber.Int64() != 1 {
		t.Error("a bad reload replaced the certificate")
	}
	// a new certificate under the same CA: no handler call
	c3, k3 := selfSigned(t, 3)
	writeFiles(t, map[string][]byte{cert: c3, key: k3})
	if err := f.reload(); err != nil || calls != 1 {
		t.Errorf("new certificate: %v, calls %d", err, calls)
	}
	writeFiles(t, map[string][]byte{caFile: c3})
	if err := f.reload(); err != nil || calls != 2 || !bytes.Equal(f.caBundle(), c3) {
		t.Errorf("new CA bundle: %v, calls %d", err, calls)
	}
	if f.clientCAs().Equal(x509.NewCertPool()) {
		t.Error("no client CAs")
	}
}

// The published root (istio-ca-root-cert, the webhooks' caBundle) is the
// CA file once it is read, the CA's root before.
func TestPublishedRootIsTheCAFile(t *testing.T) {
	authority, err := ca.New(t.Context(), ca.Options{TrustDomain: "cluster.local", DefaultCertTTL: time.Hour,
		MaxCertTTL: 2 * time.Hour, Store: ca.NewDirStore(t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key, caFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")
	sec := &secure{ca: authority, files: newFileCert(cert, key, caFile)}
	if !bytes.Equal(sec.publishedRoot(), authority.RootCertPEM()) {
		t.Error("before the files are read: not the CA's root")
	}
	c, k := selfSigned(t, 1)
	writeFiles(t, map[string][]byte{cert: c, key: k, caFile: c})
	if err := sec.files.reload(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sec.publishedRoot(), c) {
		t.Error("after: not the CA file")
	}
	if !bytes.Equal((&secure{ca: authority}).publishedRoot(), authority.RootCertPEM()) {
		t.Error("without files: not the CA's root")
	}
}
