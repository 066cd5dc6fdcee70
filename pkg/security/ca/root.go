package ca

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"time"
)

// newRootCert self-signs a root with key: subject O=<org>, valid from now
// for ttl, CA:TRUE (critical), key usage Certificate Sign (critical) and a
// Subject Key Identifier derived from the key, no extended key usage and no
// path length — the shape of Istio's self-signed root.
func newRootCert(key crypto.Signer, org string, now time.Time, ttl time.Duration) ([]byte, error) {
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{org}},
		NotBefore:             now,
		NotAfter:              now.Add(ttl),
		KeyUsage:              x509.KeyUsageCertSign,
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("cert generation fails at X509 cert creation (%v)", err)
	}
	return encodeCert(der), nil
}

// newRootMaterial makes a new self-signed root and key.
func newRootMaterial(o Options, now time.Time) (*Material, error) {
	key, err := newRootKey(o)
	if err != nil {
		return nil, fmt.Errorf("unable to generate CA cert and key for self-signed CA (%v)", err)
	}
	cert, err := newRootCert(key, o.TrustDomain, now, o.RootCertTTL)
	if err != nil {
		return nil, fmt.Errorf("unable to generate CA cert and key for self-signed CA (%v)", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &Material{CACert: cert, CAKey: keyPEM, RootCert: cert}, nil
}
