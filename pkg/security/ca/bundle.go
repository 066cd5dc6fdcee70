package ca

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"time"
)

// bundle is the signing material in use, immutable once built.
type bundle struct {
	signingCert *x509.Certificate
	signingKey  crypto.Signer
	caCertPEM   []byte
	caKeyPEM    []byte
	// certChainPEM is cert-chain.pem as read (plugged-in CA only) and
	// chainPEMs its certificates, one PEM each.
	certChainPEM []byte
	chainPEMs    [][]byte
	// rootPEM is root-cert.pem as read (it may hold several roots).
	rootPEM    []byte
	roots      []*x509.Certificate
	selfSigned bool
}

// newBundle checks the material as Istio's KeyCertBundle does: the signing
// certificate verifies against the roots through the chain, and the key is
// the certificate's.
func newBundle(caCert, caKey, certChain, rootCert []byte, now time.Time) (*bundle, error) {
	signing, err := parseCert(caCert)
	if err != nil {
		return nil, fmt.Errorf("failed to parse cert PEM: %v", err)
	}
	key, err := parseKey(caKey)
	if err != nil {
		return nil, fmt.Errorf("failed to parse private key PEM: %v", err)
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(signing.PublicKey) {
		return nil, errors.New("the cert does not match the key")
	}
	roots, _, err := parseCerts(rootCert)
	if err != nil {
		return nil, fmt.Errorf("failed to parse root cert PEM: %v", err)
	}
	if len(roots) == 0 {
		return nil, errors.New("no root certificate")
	}
	chain, chainPEMs, err := parseCerts(certChain)
	if err != nil {
		return nil, fmt.Errorf("failed to parse cert chain PEM: %v", err)
	}
	rootPool, interPool := x509.NewCertPool(), x509.NewCertPool()
	for _, r := range roots {
		rootPool.AddCert(r)
	}
	for _, c := range chain {
		interPool.AddCert(c)
	}
	if _, err := signing.Verify(x509.VerifyOptions{
		Roots: rootPool, Intermediates: interPool, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}); err != nil {
		return nil, fmt.Errorf("cannot verify the cert with the provided root chain and cert pool with error: %v", err)
	}
	return &bundle{
		signingCert:  signing,
		signingKey:   key,
		caCertPEM:    bytes.Clone(caCert),
		caKeyPEM:     bytes.Clone(caKey),
		certChainPEM: bytes.Clone(certChain),
		chainPEMs:    chainPEMs,
		rootPEM:      bytes.Clone(rootCert),
		roots:        roots,
	}, nil
}

// selfSignedBundle reads stored self-signed material; the root is
// ca-cert.pem itself, as in Istio.
func selfSignedBundle(m *Material, now time.Time) (*bundle, error) {
	b, err := newBundle(m.CACert, m.CAKey, nil, m.CACert, now)
	if err != nil {
		return nil, fmt.Errorf("failed to create CA KeyCertBundle (%v)", err)
	}
	b.selfSigned = true
	return b, nil
}

func (b *bundle) rootPool() *x509.CertPool {
	p := x509.NewCertPool()
	for _, r := range b.roots {
		p.AddCert(r)
	}
	return p
}
