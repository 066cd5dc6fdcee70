package ca_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/security/ca"
)

// epoch is the reference run's issuance time (root-cert.txt: Not Before Dec 1 07:44:09 2026 GMT).
var epoch = time.Date(2026, 12, 1, 7, 44, 9, 0, time.UTC)

var (
	rsaOnce sync.Once
	rsaKey  *rsa.PrivateKey
)

// sharedRSAKey is one RSA 2048 key for CSRs, generated once (slow under -race).
func sharedRSAKey(t testing.TB) *rsa.PrivateKey {
	rsaOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		rsaKey = k
	})
	return rsaKey
}

func ecKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// csrPEM makes a CSR for key, with a subject CN and URI SANs of its own
// (which the CA must ignore).
func csrPEM(t testing.TB, key crypto.Signer, cn string, uris ...string) []byte {
	t.Helper()
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}
	for _, u := range uris {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func parsePEMCert(t testing.TB, p string) *x509.Certificate {
	t.Helper()
	b, rest := pem.Decode([]byte(p))
	if b == nil || len(rest) != 0 {
		t.Fatalf("not exactly one PEM block: %q", p)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newECCA is a fast CA (ECDSA root) in memory at epoch on a fake clock.
func newECCA(t testing.TB, o ca.Options) (*ca.CA, *clock.Fake) {
	t.Helper()
	fc := clock.NewFake(epoch)
	if o.Clock == nil {
		o.Clock = fc
	}
	o.KeyType = ca.KeyECDSAP256
	c, err := ca.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return c, fc
}

func mustRoot(t testing.TB, c *ca.CA) *x509.Certificate {
	t.Helper()
	roots := c.RootCerts()
	if len(roots) != 1 {
		t.Fatalf("roots = %d", len(roots))
	}
	return roots[0]
}

func verify(t testing.TB, leaf *x509.Certificate, roots *x509.CertPool, at time.Time, inter ...*x509.Certificate) {
	t.Helper()
	ip := x509.NewCertPool()
	for _, c := range inter {
		ip.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: ip, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Fatalf("leaf does not verify: %v", err)
	}
}
