package credentials

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Keys of the two Secret formats.
const (
	GenericCert   = "cert"
	GenericKey    = "key"
	GenericCACert = "cacert"
	GenericCRL    = "crl"
	TLSCert       = "tls.crt"
	TLSKey        = "tls.key"
	TLSCACert     = "ca.crt"
	TLSCRL        = "ca.crl"
	TLSOCSPStaple = "tls.ocsp-staple"
	// CASuffix names the CA of a credential: <name>-cacert.
	CASuffix = "-cacert"
)

// CertInfo is a certificate with its key, or a CA with its CRL.
type CertInfo struct {
	Cert, Key, Staple []byte
	CA, CRL           []byte
}

// ErrNotFound is returned for a Secret that does not exist.
var ErrNotFound = errors.New("secret not found")

// Source reads Secrets by namespace and name (nil, false when absent).
// Returned Secrets are shared: callers must not modify them.
type Source interface {
	Secret(namespace, name string) (*corev1.Secret, bool)
}

// Certificate extracts the certificate and key of a Secret, and checks
// that they are PEM and belong together.
func Certificate(s *corev1.Secret) (CertInfo, error) {
	var ci CertInfo
	switch {
	case has(s, GenericCert, GenericKey):
		ci = CertInfo{Cert: s.Data[GenericCert], Key: s.Data[GenericKey]}
	case has(s, TLSCert, TLSKey):
		ci = CertInfo{Cert: s.Data[TLSCert], Key: s.Data[TLSKey], Staple: s.Data[TLSOCSPStaple]}
	default:
		return CertInfo{}, fmt.Errorf("secret %s/%s has neither keys %q and %q nor %q and %q (it has %s)",
			s.Namespace, s.Name, GenericCert, GenericKey, TLSCert, TLSKey, keys(s))
	}
	if _, err := tls.X509KeyPair(ci.Cert, ci.Key); err != nil {
		return CertInfo{}, fmt.Errorf("secret %s/%s: the certificate and key are not a valid PEM pair: %v", s.Namespace, s.Name, err)
	}
	return ci, nil
}

// CACertificate extracts the CA (and CRL) of a Secret: key "cacert" (with
// "crl"), else "ca.crt" (with "ca.crl").
func CACertificate(s *corev1.Secret) (CertInfo, error) {
	var ci CertInfo
	switch {
	case has(s, GenericCACert):
		ci = CertInfo{CA: s.Data[GenericCACert], CRL: s.Data[GenericCRL]}
	case has(s, TLSCACert):
		ci = CertInfo{CA: s.Data[TLSCACert], CRL: s.Data[TLSCRL]}
	default:
		return CertInfo{}, fmt.Errorf("secret %s/%s has no CA certificate: neither key %q nor %q (it has %s)",
			s.Namespace, s.Name, GenericCACert, TLSCACert, keys(s))
	}
	if err := checkCerts(ci.CA); err != nil {
		return CertInfo{}, fmt.Errorf("secret %s/%s: the CA certificate is not valid PEM: %v", s.Namespace, s.Name, err)
	}
	return ci, nil
}

// Lookup resolves the certificate of Secret namespace/name, or for a name
// ending in -cacert its CA: from the Secret of that exact name when it
// exists, else from the CA key of the Secret without the suffix.
func Lookup(src Source, namespace, name string) (CertInfo, error) {
	if base, isCA := strings.CutSuffix(name, CASuffix); isCA {
		if s, ok := src.Secret(namespace, name); ok {
			return CACertificate(s)
		}
		if s, ok := src.Secret(namespace, base); ok {
			return CACertificate(s)
		}
		return CertInfo{}, fmt.Errorf("%w: neither %s/%s nor %s/%s exists", ErrNotFound, namespace, name, namespace, base)
	}
	s, ok := src.Secret(namespace, name)
	if !ok {
		return CertInfo{}, fmt.Errorf("%w: %s/%s", ErrNotFound, namespace, name)
	}
	return Certificate(s)
}

func has(s *corev1.Secret, ks ...string) bool {
	for _, k := range ks {
		if len(s.Data[k]) == 0 {
			return false
		}
	}
	return true
}

func keys(s *corev1.Secret) string {
	if len(s.Data) == 0 {
		return "no data"
	}
	out := make([]string, 0, len(s.Data))
	for k := range s.Data {
		out = append(out, fmt.Sprintf("%q", k))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// checkCerts requires at least one PEM certificate and nothing else
// unparseable.
func checkCerts(b []byte) error {
	n := 0
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return errors.New("no PEM certificate found")
	}
	return nil
}

// Map is a Source of fixed Secrets by "namespace/name" (tests, files).
type Map map[string]*corev1.Secret

// Secret implements Source.
func (m Map) Secret(namespace, name string) (*corev1.Secret, bool) {
	s, ok := m[namespace+"/"+name]
	return s, ok
}

// Lookup is Lookup on the map.
func (m Map) Lookup(namespace, name string) (CertInfo, error) { return Lookup(m, namespace, name) }
