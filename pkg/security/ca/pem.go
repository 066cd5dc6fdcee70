package ca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

const (
	pemCertificate = "CERTIFICATE"
	pemRSAKey      = "RSA PRIVATE KEY"
	pemECKey       = "EC PRIVATE KEY"
	pemPKCS8Key    = "PRIVATE KEY"
	pemCSR         = "CERTIFICATE REQUEST"
)

// encodeCert is the PEM of one DER certificate, ending in a newline.
func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der})
}

// encodeKey encodes RSA keys as PKCS#1 ("RSA PRIVATE KEY") and ECDSA keys as
// SEC 1 ("EC PRIVATE KEY"), as Istio does.
func encodeKey(key crypto.Signer) ([]byte, error) {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return pem.EncodeToMemory(&pem.Block{Type: pemRSAKey, Bytes: x509.MarshalPKCS1PrivateKey(k)}), nil
	case *ecdsa.PrivateKey:
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: pemECKey, Bytes: der}), nil
	}
	return nil, fmt.Errorf("unsupported private key type %T", key)
}

// parseKey reads a PKCS#1 RSA, SEC 1 EC or PKCS#8 private key.
func parseKey(b []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("invalid PEM-encoded key")
	}
	var (
		key any
		err error
	)
	switch block.Type {
	case pemRSAKey:
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case pemECKey:
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case pemPKCS8Key:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("unsupported PEM block type for a private key: %s", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to parse the %s: %v", strings.ToLower(block.Type), err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	switch signer.(type) {
	case *rsa.PrivateKey, *ecdsa.PrivateKey:
		return signer, nil
	}
	return nil, fmt.Errorf("unsupported private key type %T (RSA or ECDSA only)", key)
}

// parseCert reads the first certificate of a PEM bundle.
func parseCert(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != pemCertificate {
		return nil, errors.New("invalid PEM encoded certificate")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("failed to parse X.509 certificate: %v", err)
	}
	return c, nil
}

// parseCerts reads every certificate of a PEM bundle and the PEM of each
// (ending in exactly one newline). Blocks of other types are skipped.
func parseCerts(b []byte) ([]*x509.Certificate, [][]byte, error) {
	var (
		certs []*x509.Certificate
		pems  [][]byte
	)
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != pemCertificate {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("failed to parse X.509 certificate %d: %v", len(certs)+1, err)
		}
		certs = append(certs, c)
		pems = append(pems, encodeCert(block.Bytes))
	}
	return certs, pems, nil
}

// parseCSR decodes and parses a PEM CSR, with Istio's messages.
func parseCSR(b []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("certificate signing request is not properly encoded")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("failed to parse X.509 certificate signing request: %v", err)
	}
	return csr, nil
}

// newKey makes a key like the signer's: ECDSA on the same curve (P-384 or
// P-256), RSA 2048 otherwise, as Istio's GenKeyCert.
func newKeyLike(signer crypto.Signer) (crypto.Signer, error) {
	if ec, ok := signer.(*ecdsa.PrivateKey); ok {
		curve := elliptic.P256()
		if ec.Curve == elliptic.P384() {
			curve = elliptic.P384()
		}
		return ecdsa.GenerateKey(curve, rand.Reader)
	}
	return rsa.GenerateKey(rand.Reader, DefaultRSAKeySize)
}

// newRootKey makes the key of a new self-signed root.
func newRootKey(o Options) (crypto.Signer, error) {
	switch o.KeyType {
	case KeyECDSAP256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case KeyRSA:
		if o.RSAKeySize < MinimumRSAKeySize {
			return nil, fmt.Errorf("requested key size does not meet the minimum required size of %d (requested: %d)", MinimumRSAKeySize, o.RSAKeySize)
		}
		return rsa.GenerateKey(rand.Reader, o.RSAKeySize)
	}
	return nil, fmt.Errorf("unknown key type %d", o.KeyType)
}

// serialLimit bounds serial numbers to 128 bits, as Istio's.
var serialLimit = new(big.Int).Lsh(big.NewInt(1), 128)

func newSerial() (*big.Int, error) {
	for {
		n, err := rand.Int(rand.Reader, serialLimit)
		if err != nil {
			return nil, fmt.Errorf("serial number generation failure (%v)", err)
		}
		if n.Sign() > 0 {
			return n, nil
		}
	}
}
