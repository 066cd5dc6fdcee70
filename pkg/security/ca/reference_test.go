package ca_test

// These tests check the certificates against what Istio's istiod produced,
// recorded in /work/shared/reference/security/real/: root-cert.txt,
// secret-istio-ca-secret.txt, workload-cert.txt and istiod-serving-cert.txt.

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/asn1"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/security/ca"
)

var (
	oidSKI = asn1.ObjectIdentifier{2, 5, 29, 14}
	oidKU  = asn1.ObjectIdentifier{2, 5, 29, 15}
	oidSAN = asn1.ObjectIdentifier{2, 5, 29, 17}
	oidBC  = asn1.ObjectIdentifier{2, 5, 29, 19}
	oidAKI = asn1.ObjectIdentifier{2, 5, 29, 35}
	oidEKU = asn1.ObjectIdentifier{2, 5, 29, 37}
)

// extensions maps each extension's OID to its critical flag.
func extensions(c *x509.Certificate) map[string]bool {
	out := map[string]bool{}
	for _, e := range c.Extensions {
		out[e.Id.String()] = e.Critical
	}
	return out
}

func wantExtensions(t *testing.T, what string, c *x509.Certificate, want map[string]bool) {
	t.Helper()
	got := extensions(c)
	if len(got) != len(want) {
		t.Errorf("%s: extensions %v, want %v", what, got, want)
	}
	for oid, crit := range want {
		if g, ok := got[oid]; !ok || g != crit {
			t.Errorf("%s: extension %s present=%v critical=%v, want critical=%v", what, oid, ok, g, crit)
		}
	}
}

// emptySubject is the DER of an empty Name (openssl prints "Subject: ").
var emptySubject = []byte{0x30, 0x00}

// referenceCA is an RSA CA as istiod made it: Secret istio-system/istio-ca-secret, defaults.
func referenceCA(t *testing.T) (*ca.CA, *fake.Clientset, *clock.Fake) {
	t.Helper()
	client := fake.NewClientset()
	fc := clock.NewFake(epoch)
	c, err := ca.New(context.Background(), ca.Options{
		Store: ca.NewSecretStore(client.CoreV1().Secrets("istio-system"), "istio-system"),
		Clock: fc,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, client, fc
}

func TestReferenceRootAndSecret(t *testing.T) {
	c, client, _ := referenceCA(t)
	root := mustRoot(t, c)

	// root-cert.txt
	if root.Version != 3 || root.SignatureAlgorithm != x509.SHA256WithRSA {
		t.Errorf("version %d, signature %v", root.Version, root.SignatureAlgorithm)
	}
	if root.Subject.String() != "O=cluster.local" || root.Issuer.String() != "O=cluster.local" {
		t.Errorf("subject %q issuer %q", root.Subject, root.Issuer)
	}
	pub, ok := root.PublicKey.(*rsa.PublicKey)
	if !ok || pub.N.BitLen() != 2048 || pub.E != 65537 {
		t.Errorf("public key %T", root.PublicKey)
	}
	if !root.NotBefore.Equal(epoch) || !root.NotAfter.Equal(time.Date(2036, 11, 28, 7, 44, 9, 0, time.UTC)) {
		t.Errorf("validity %v .. %v, want Dec 1 2026 .. Nov 28 2036 07:44:09", root.NotBefore, root.NotAfter)
	}
	if !root.IsCA || !root.BasicConstraintsValid || root.MaxPathLen > 0 || root.MaxPathLenZero {
		t.Errorf("basic constraints CA=%v pathlen=%d", root.IsCA, root.MaxPathLen)
	}
	if root.KeyUsage != x509.KeyUsageCertSign || len(root.ExtKeyUsage) != 0 {
		t.Errorf("key usage %v ext %v", root.KeyUsage, root.ExtKeyUsage)
	}
	if len(root.SubjectKeyId) != 20 || len(root.AuthorityKeyId) != 0 {
		t.Errorf("SKI %x AKI %x", root.SubjectKeyId, root.AuthorityKeyId)
	}
	wantExtensions(t, "root", root, map[string]bool{oidKU.String(): true, oidBC.String(): true, oidSKI.String(): false})
	if root.SerialNumber.Sign() <= 0 || root.SerialNumber.BitLen() > 128 {
		t.Errorf("serial %v", root.SerialNumber)
	}

	// secret-istio-ca-secret.txt
	sec, err := client.CoreV1().Secrets("istio-system").Get(context.Background(), "istio-ca-secret", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sec.Type != "istio.io/ca-root" {
		t.Errorf("type %q", sec.Type)
	}
	keys := make([]string, 0, len(sec.Data))
	for k := range sec.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"ca-cert.pem", "ca-key.pem", "cert-chain.pem", "key.pem", "root-cert.pem"}) {
		t.Errorf("keys %v", keys)
	}
	if len(sec.Data["cert-chain.pem"]) != 0 || len(sec.Data["key.pem"]) != 0 {
		t.Error("cert-chain.pem and key.pem must be empty")
	}
	if !bytes.HasPrefix(sec.Data["ca-cert.pem"], []byte("-----BEGIN CERTIFICATE-----")) ||
		!bytes.Equal(sec.Data["ca-cert.pem"], sec.Data["root-cert.pem"]) ||
		!bytes.Equal(sec.Data["ca-cert.pem"], c.RootCertPEM()) {
		t.Error("ca-cert.pem, root-cert.pem and the published root must be the same certificate")
	}
	if !bytes.HasPrefix(sec.Data["ca-key.pem"], []byte("-----BEGIN RSA PRIVATE KEY-----")) {
		t.Errorf("ca-key.pem is not PKCS#1: %.40q", sec.Data["ca-key.pem"])
	}
	if !bytes.HasSuffix(c.RootCertPEM(), []byte("-----END CERTIFICATE-----\n")) {
		t.Error("published root must end with a newline")
	}
	if !c.SelfSigned() || c.TrustDomain() != "cluster.local" || len(c.CertChainPEM()) != 0 {
		t.Error("self-signed CA accessors")
	}
}

func TestReferenceWorkloadCert(t *testing.T) {
	c, _, fc := referenceCA(t)
	root := mustRoot(t, c)
	fc.Advance(4 * time.Second) // workload-cert.txt: issued at 07:44:13
	now := fc.Now()
	id := "spiffe://cluster.local/ns/bookinfo/sa/bookinfo-productpage"
	chain, err := c.Sign(csrPEM(t, sharedRSAKey(t), "", id), []string{id}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(chain) != 2 || chain[1] != string(c.RootCertPEM()) {
		t.Fatalf("chain: %d entries, root last: %v", len(chain), len(chain) == 2 && chain[1] == string(c.RootCertPEM()))
	}
	if !strings.HasSuffix(chain[0], "-----END CERTIFICATE-----\n") || strings.HasSuffix(chain[0], "\n\n") {
		t.Errorf("leaf PEM must end with one newline: %q", chain[0][len(chain[0])-30:])
	}
	leaf := parsePEMCert(t, chain[0])
	if leaf.Version != 3 || leaf.SignatureAlgorithm != x509.SHA256WithRSA || leaf.Issuer.String() != "O=cluster.local" {
		t.Errorf("version %d sig %v issuer %q", leaf.Version, leaf.SignatureAlgorithm, leaf.Issuer)
	}
	if !bytes.Equal(leaf.RawSubject, emptySubject) {
		t.Errorf("subject %q, want none", leaf.Subject)
	}
	if !leaf.NotBefore.Equal(now.Add(-2*time.Minute)) || !leaf.NotAfter.Equal(now.Add(24*time.Hour)) {
		t.Errorf("validity %v .. %v", leaf.NotBefore, leaf.NotAfter)
	}
	if leaf.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment {
		t.Errorf("key usage %v", leaf.KeyUsage)
	}
	if !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) {
		t.Errorf("EKU %v", leaf.ExtKeyUsage)
	}
	if leaf.IsCA || !leaf.BasicConstraintsValid {
		t.Error("want CA:FALSE")
	}
	if !bytes.Equal(leaf.AuthorityKeyId, root.SubjectKeyId) || len(leaf.SubjectKeyId) != 0 {
		t.Errorf("AKI %x root SKI %x leaf SKI %x", leaf.AuthorityKeyId, root.SubjectKeyId, leaf.SubjectKeyId)
	}
	if len(leaf.URIs) != 1 || leaf.URIs[0].String() != id || len(leaf.DNSNames)+len(leaf.IPAddresses)+len(leaf.EmailAddresses) != 0 {
		t.Errorf("SANs %v %v %v", leaf.URIs, leaf.DNSNames, leaf.IPAddresses)
	}
	wantExtensions(t, "leaf", leaf, map[string]bool{
		oidKU.String(): true, oidEKU.String(): false, oidBC.String(): true, oidAKI.String(): false, oidSAN.String(): true,
	})
	if leaf.SerialNumber.Sign() <= 0 || leaf.SerialNumber.BitLen() > 128 {
		t.Errorf("serial %v", leaf.SerialNumber)
	}
	verify(t, leaf, c.RootCertPool(), now)
}

func TestReferenceServingCert(t *testing.T) {
	c, _, fc := referenceCA(t)
	root := mustRoot(t, c)
	sans := ca.ServingCertSANs("istio-system", "", "", nil)
	want := []string{"istio-pilot.istio-system.svc", "istiod-remote.istio-system.svc", "istiod.istio-system.svc"}
	if !slices.Equal(sans, want) {
		t.Fatalf("SANs %v, want %v (istiod-log-security.txt)", sans, want)
	}
	dns, ips := ca.SplitHosts(sans)
	tc, err := c.ServingCert(dns, ips)
	if err != nil {
		t.Fatal(err)
	}
	if len(tc.Certificate) != 1 {
		t.Fatalf("serving chain has %d certificates, want the leaf alone", len(tc.Certificate))
	}
	leaf := tc.Leaf
	if !bytes.Equal(leaf.Raw, tc.Certificate[0]) {
		t.Fatal("Leaf is not Certificate[0]")
	}
	if !bytes.Equal(leaf.RawSubject, emptySubject) || leaf.Issuer.String() != "O=cluster.local" {
		t.Errorf("subject %q issuer %q", leaf.Subject, leaf.Issuer)
	}
	if !slices.Equal(leaf.DNSNames, want) || len(leaf.IPAddresses) != 0 || len(leaf.URIs) != 0 {
		t.Errorf("SANs %v IPs %v", leaf.DNSNames, leaf.IPAddresses)
	}
	if !leaf.NotBefore.Equal(fc.Now().Add(-2*time.Minute)) || !leaf.NotAfter.Equal(root.NotAfter) {
		t.Errorf("validity %v .. %v, want -2m .. root expiry %v", leaf.NotBefore, leaf.NotAfter, root.NotAfter)
	}
	if k, ok := tc.PrivateKey.(*rsa.PrivateKey); !ok || k.N.BitLen() != 2048 {
		t.Errorf("key %T", tc.PrivateKey)
	}
	if leaf.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment ||
		!slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) || leaf.IsCA {
		t.Errorf("usages %v %v CA=%v", leaf.KeyUsage, leaf.ExtKeyUsage, leaf.IsCA)
	}
	if !bytes.Equal(leaf.AuthorityKeyId, root.SubjectKeyId) {
		t.Error("AKI")
	}
	wantExtensions(t, "serving", leaf, map[string]bool{
		oidKU.String(): true, oidEKU.String(): false, oidBC.String(): true, oidAKI.String(): false, oidSAN.String(): true,
	})
	// A client dialling 127.0.0.1 must verify istiod.istio-system.svc; the IP fails (grpc-status.txt).
	if err := leaf.VerifyHostname("istiod.istio-system.svc"); err != nil {
		t.Error(err)
	}
	if err := leaf.VerifyHostname("127.0.0.1"); err == nil || !strings.Contains(err.Error(), "doesn't contain any IP SANs") {
		t.Errorf("VerifyHostname(127.0.0.1) = %v", err)
	}
	certPEM, keyPEM, err := ca.EncodeCertificate(tc)
	if err != nil || !bytes.HasPrefix(certPEM, []byte("-----BEGIN CERTIFICATE-----")) || !bytes.HasPrefix(keyPEM, []byte("-----BEGIN RSA PRIVATE KEY-----")) {
		t.Errorf("EncodeCertificate: %v", err)
	}
}
