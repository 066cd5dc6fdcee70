package ca

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Sign issues a workload certificate for the public key of csrPEM. The
// identities are the authenticated caller's and become the certificate's
// SANs (a spiffe:// or other URI → URI SAN, an IP literal → IP SAN, anything
// else → DNS SAN); the CSR's own subject and SANs are ignored. ttl ≤ 0
// means DefaultCertTTL; ttl over MaxCertTTL is a TTLError. NotAfter never
// passes the signing certificate's.
//
// The chain is what IstioCertificateResponse.cert_chain carries: the leaf,
// then each certificate of the plugged-in cert-chain.pem, each PEM ending in
// one newline, then root-cert.pem as stored (the root last). Errors are
// *Error.
func (c *CA) Sign(csrPEM []byte, identities []string, ttl time.Duration) ([]string, error) {
	b := c.state.Load()
	if b == nil {
		return nil, newError(CANotReady, errors.New("Istio CA is not ready"))
	}
	csr, err := parseCSR(csrPEM)
	if err != nil {
		return nil, newError(CSRError, err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, newError(CSRError, err)
	}
	lifetime := ttl
	if ttl <= 0 {
		lifetime = c.opts.DefaultCertTTL
	}
	if ttl.Seconds() > c.opts.MaxCertTTL.Seconds() {
		return nil, newError(TTLError, fmt.Errorf("requested TTL %s is greater than the max allowed TTL %s", ttl, c.opts.MaxCertTTL))
	}
	sans, err := sansFromIdentities(identities)
	if err != nil {
		return nil, newError(CertGenError, err)
	}
	der, err := issue(b, csr.PublicKey, sans, lifetime, c.clock.Now())
	if err != nil {
		return nil, newError(CertGenError, err)
	}
	chain := []string{string(encodeCert(der))}
	for _, p := range b.chainPEMs {
		chain = append(chain, string(p))
	}
	if len(b.rootPEM) > 0 {
		chain = append(chain, string(b.rootPEM))
	}
	return chain, nil
}

// subjectAltNames are the SANs of a leaf.
type subjectAltNames struct {
	dns  []string
	ips  []net.IP
	uris []*url.URL
}

func (s subjectAltNames) empty() bool { return len(s.dns)+len(s.ips)+len(s.uris) == 0 }

func sansFromIdentities(ids []string) (subjectAltNames, error) {
	var s subjectAltNames
	for _, id := range ids {
		switch {
		case id == "":
			return s, errors.New("empty identity")
		case strings.Contains(id, "://"):
			u, err := url.Parse(id)
			if err != nil {
				return s, fmt.Errorf("identity %q is not a valid URI: %v", id, err)
			}
			s.uris = append(s.uris, u)
		default:
			if a, err := netip.ParseAddr(id); err == nil {
				s.ips = append(s.ips, net.IP(a.Unmap().AsSlice()))
			} else {
				s.dns = append(s.dns, id)
			}
		}
	}
	if s.empty() {
		return s, errors.New("no identity to certify")
	}
	return s, nil
}

// issue signs a leaf shaped as Istio's: no subject (so the SAN extension is
// critical), key usage Digital Signature and Key Encipherment, EKU server
// and client auth, CA:FALSE, Authority Key Identifier = the signer's Subject
// Key Identifier, valid from now − ClockSkewGracePeriod until now+lifetime
// or the signer's NotAfter, whichever is first.
func issue(b *bundle, pub crypto.PublicKey, sans subjectAltNames, lifetime time.Duration, now time.Time) ([]byte, error) {
	signer := b.signingCert
	if !now.Before(signer.NotAfter) {
		return nil, fmt.Errorf("signing certificate has expired at %v", signer.NotAfter)
	}
	notAfter := now.Add(lifetime)
	if !notAfter.Before(signer.NotAfter) {
		notAfter = signer.NotAfter
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		NotBefore:             now.Add(-ClockSkewGracePeriod),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		DNSNames:              sans.dns,
		IPAddresses:           sans.ips,
		URIs:                  sans.uris,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, pub, b.signingKey)
	if err != nil {
		return nil, fmt.Errorf("cert generation fails at X509 cert creation (%v)", err)
	}
	return der, nil
}
