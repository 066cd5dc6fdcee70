package ca_test

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/meshplane/istiod/pkg/security/ca"
)

const productpage = "spiffe://cluster.local/ns/bookinfo/sa/bookinfo-productpage"

func signLeaf(t *testing.T, c *ca.CA, ids []string, ttl time.Duration) *x509.Certificate {
	t.Helper()
	chain, err := c.Sign(csrPEM(t, ecKey(t), ""), ids, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return parsePEMCert(t, chain[0])
}

func TestSignTTL(t *testing.T) {
	c, fc := newECCA(t, ca.Options{})
	now := fc.Now()
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		want time.Duration
	}{
		{"zero is the default", 0, 24 * time.Hour},
		{"negative is the default", -time.Hour, 24 * time.Hour},
		{"48h is honoured", 48 * time.Hour, 48 * time.Hour},
		{"1h", time.Hour, time.Hour},
		{"exactly the max", 90 * 24 * time.Hour, 90 * 24 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaf := signLeaf(t, c, []string{productpage}, tc.ttl)
			if !leaf.NotAfter.Equal(now.Add(tc.want)) || !leaf.NotBefore.Equal(now.Add(-2*time.Minute)) {
				t.Fatalf("validity %v .. %v, want -2m .. +%v", leaf.NotBefore, leaf.NotAfter, tc.want)
			}
		})
	}
	if c.DefaultCertTTL() != 24*time.Hour || c.MaxCertTTL() != 90*24*time.Hour {
		t.Fatalf("defaults %v %v", c.DefaultCertTTL(), c.MaxCertTTL())
	}
}

func TestSignConfiguredTTLs(t *testing.T) {
	c, fc := newECCA(t, ca.Options{DefaultCertTTL: 2 * time.Hour, MaxCertTTL: 3 * time.Hour})
	leaf := signLeaf(t, c, []string{productpage}, 0)
	if !leaf.NotAfter.Equal(fc.Now().Add(2 * time.Hour)) {
		t.Fatalf("NotAfter %v", leaf.NotAfter)
	}
	_, err := c.Sign(csrPEM(t, ecKey(t), ""), []string{productpage}, 3*time.Hour+time.Second)
	if err == nil || err.Error() != "requested TTL 3h0m1s is greater than the max allowed TTL 3h0m0s" {
		t.Fatalf("err = %v", err)
	}
}

func TestSignTTLOverMax(t *testing.T) {
	c, _ := newECCA(t, ca.Options{})
	_, err := c.Sign(csrPEM(t, ecKey(t), ""), []string{productpage}, 90*24*time.Hour+time.Second)
	e, ok := ca.AsError(err)
	if !ok {
		t.Fatalf("err %v is not a *ca.Error", err)
	}
	if e.Error() != "requested TTL 2160h0m1s is greater than the max allowed TTL 2160h0m0s" {
		t.Fatalf("message %q", e.Error())
	}
	if e.Type != ca.TTLError || e.Code() != codes.InvalidArgument || e.Label() != "TTL_ERROR" {
		t.Fatalf("type %v code %v label %s", e.Type, e.Code(), e.Label())
	}
}

func TestSignBadCSR(t *testing.T) {
	c, _ := newECCA(t, ca.Options{})
	good := csrPEM(t, ecKey(t), "")
	block, _ := pem.Decode(good)
	tampered := append([]byte(nil), block.Bytes...)
	tampered[len(tampered)-1] ^= 0xff // breaks the signature
	for _, tc := range []struct {
		name string
		csr  []byte
		want string
	}{
		{"garbage", []byte("not a csr"), "certificate signing request is not properly encoded"},
		{"empty", nil, "certificate signing request is not properly encoded"},
		{"bad DER", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte{1, 2, 3}}), "failed to parse X.509 certificate signing request"},
		{"bad signature", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: tampered}), "verification failure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Sign(tc.csr, []string{productpage}, 0)
			e, ok := ca.AsError(err)
			if !ok || e.Type != ca.CSRError || e.Code() != codes.InvalidArgument || e.Label() != "CSR_ERROR" {
				t.Fatalf("err = %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestSignIgnoresTheCSRsNames(t *testing.T) {
	c, _ := newECCA(t, ca.Options{})
	intruder := "spiffe://cluster.local/ns/elsewhere/sa/intruder"
	// grpc-status.txt: a CSR naming productpage, from intruder, got intruder's identity.
	chain, err := c.Sign(csrPEM(t, ecKey(t), "productpage", productpage), []string{intruder}, 0)
	if err != nil {
		t.Fatal(err)
	}
	leaf := parsePEMCert(t, chain[0])
	if len(leaf.URIs) != 1 || leaf.URIs[0].String() != intruder || leaf.Subject.CommonName != "" {
		t.Fatalf("URIs %v CN %q", leaf.URIs, leaf.Subject.CommonName)
	}
}

func TestSignIdentityKinds(t *testing.T) {
	c, _ := newECCA(t, ca.Options{})
	leaf := signLeaf(t, c, []string{productpage, "spiffe://cluster.local/ns/bookinfo/sa/other", "10.0.0.1", "::ffff:10.0.0.2", "fd00::1", "host.example"}, 0)
	var uris []string
	for _, u := range leaf.URIs {
		uris = append(uris, u.String())
	}
	if !slices.Equal(uris, []string{productpage, "spiffe://cluster.local/ns/bookinfo/sa/other"}) {
		t.Errorf("URIs %v", uris)
	}
	wantIPs := []net.IP{net.ParseIP("10.0.0.1").To4(), net.ParseIP("10.0.0.2").To4(), net.ParseIP("fd00::1")}
	if len(leaf.IPAddresses) != 3 {
		t.Fatalf("IPs %v", leaf.IPAddresses)
	}
	for i, ip := range wantIPs {
		if !leaf.IPAddresses[i].Equal(ip) {
			t.Errorf("IP %d = %v, want %v", i, leaf.IPAddresses[i], ip)
		}
	}
	if !slices.Equal(leaf.DNSNames, []string{"host.example"}) {
		t.Errorf("DNS %v", leaf.DNSNames)
	}
	for _, bad := range [][]string{nil, {""}, {"spiffe://bad host/%zz"}} {
		_, err := c.Sign(csrPEM(t, ecKey(t), ""), bad, 0)
		if e, ok := ca.AsError(err); !ok || e.Type != ca.CertGenError || e.Code() != codes.Internal || e.Label() != "CERT_GEN_ERROR" {
			t.Errorf("identities %q: err = %v", bad, err)
		}
	}
}

func TestSignECDSARoot(t *testing.T) {
	c, fc := newECCA(t, ca.Options{TrustDomain: "example.org"})
	root := mustRoot(t, c)
	if root.Subject.String() != "O=example.org" || root.SignatureAlgorithm != x509.ECDSAWithSHA256 {
		t.Fatalf("root %q %v", root.Subject, root.SignatureAlgorithm)
	}
	if _, ok := root.PublicKey.(*ecdsa.PublicKey); !ok {
		t.Fatalf("root key %T", root.PublicKey)
	}
	// an RSA CSR under an ECDSA root is fine
	chain, err := c.Sign(csrPEM(t, sharedRSAKey(t), ""), []string{"spiffe://example.org/ns/a/sa/b"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	verify(t, parsePEMCert(t, chain[0]), c.RootCertPool(), fc.Now())
	tc, err := c.ServingCert([]string{"istiod.istio-system.svc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := tc.PrivateKey.(*ecdsa.PrivateKey); !ok || k.Curve.Params().Name != "P-256" {
		t.Fatalf("serving key %T, want ECDSA P-256 like the signer", tc.PrivateKey)
	}
}

func TestSignClampsToRootAndRefusesAfterExpiry(t *testing.T) {
	c, fc := newECCA(t, ca.Options{RootCertTTL: 30 * time.Hour})
	root := mustRoot(t, c)
	fc.Advance(10 * time.Hour)
	leaf := signLeaf(t, c, []string{productpage}, 24*time.Hour)
	if !leaf.NotAfter.Equal(root.NotAfter) {
		t.Fatalf("NotAfter %v, want clamped to the root's %v", leaf.NotAfter, root.NotAfter)
	}
	fc.Set(root.NotAfter)
	_, err := c.Sign(csrPEM(t, ecKey(t), ""), []string{productpage}, 0)
	if e, ok := ca.AsError(err); !ok || e.Type != ca.CertGenError || !strings.Contains(err.Error(), "signing certificate has expired") {
		t.Fatalf("err = %v", err)
	}
	if _, err := c.ServingCert([]string{"x"}, nil); err == nil {
		t.Fatal("serving cert signed by an expired root")
	}
}

func TestErrorLabelsAndCodes(t *testing.T) {
	for _, tc := range []struct {
		typ   ca.ErrorType
		label string
		code  codes.Code
	}{
		{ca.CANotReady, "CA_NOT_READY", codes.Internal},
		{ca.CSRError, "CSR_ERROR", codes.InvalidArgument},
		{ca.TTLError, "TTL_ERROR", codes.InvalidArgument},
		{ca.CertGenError, "CERT_GEN_ERROR", codes.Internal},
		{ca.ErrorType(42), "UNKNOWN", codes.Internal},
	} {
		e := &ca.Error{Type: tc.typ, Err: errors.New("x")}
		if e.Label() != tc.label || e.Code() != tc.code || !errors.Is(e, e.Err) {
			t.Errorf("%d: %s %v", tc.typ, e.Label(), e.Code())
		}
	}
	if _, ok := ca.AsError(errors.New("plain")); ok {
		t.Error("AsError of a plain error")
	}
}

func TestNewRefusesSmallRSAKeys(t *testing.T) {
	_, err := ca.New(t.Context(), ca.Options{RSAKeySize: 1024})
	if err == nil || !strings.Contains(err.Error(), "minimum required size of 2048") {
		t.Fatalf("err = %v", err)
	}
}
