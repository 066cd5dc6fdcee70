package ca

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// ServingCertSANs is the SAN list of istiod's serving certificate, as
// Istio's getDNSNames: the discovery host (default istiod.<ns>.svc, or
// istiod-<revision>.<ns>.svc with a revision), istiod.<ns>.svc,
// istiod-remote.<ns>.svc, istio-pilot.<ns>.svc, istiod-<revision>.<ns>.svc
// when revision is set and not "default", and every ISTIOD_CUSTOM_HOST entry
// (an IP literal stays an IP); sorted, without duplicates or empty entries.
func ServingCertSANs(namespace, revision, discoveryHost string, customHosts []string) []string {
	revisioned := revision != "" && revision != "default"
	if discoveryHost == "" {
		discoveryHost = "istiod." + namespace + ".svc"
		if revisioned {
			discoveryHost = "istiod-" + revision + "." + namespace + ".svc"
		}
	}
	known := []string{"istiod", "istiod-remote", "istio-pilot"}
	if revisioned {
		known = append(known, "istiod-"+revision)
	}
	sans := []string{discoveryHost}
	for _, k := range known {
		sans = append(sans, k+"."+namespace+".svc")
	}
	for _, h := range customHosts {
		if h = strings.TrimSpace(h); h != "" {
			sans = append(sans, h)
		}
	}
	slices.Sort(sans)
	return slices.Compact(sans)
}

// SplitHosts separates IP literals from DNS names.
func SplitHosts(hosts []string) (dnsNames []string, ips []net.IP) {
	for _, h := range hosts {
		if a, err := netip.ParseAddr(h); err == nil {
			ips = append(ips, net.IP(a.Unmap().AsSlice()))
		} else {
			dnsNames = append(dnsNames, h)
		}
	}
	return dnsNames, ips
}

// ServingCert signs a certificate for istiod's own TLS ports with a fresh
// key like the signing key (RSA 2048, or ECDSA on the signer's curve): no
// subject, critical SANs dnsNames and ips, EKU server and client auth,
// valid from 2 minutes ago for RootCertTTL, so in effect until the signing
// certificate expires. The TLS certificate holds the leaf and the
// plugged-in chain, never the root, and has Leaf set. It counts in no
// metric.
func (c *CA) ServingCert(dnsNames []string, ips []net.IP) (tls.Certificate, error) {
	b := c.state.Load()
	if len(dnsNames)+len(ips) == 0 {
		return tls.Certificate{}, errors.New("serving certificate needs at least one DNS name or IP")
	}
	key, err := newKeyLike(b.signingKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	der, err := issue(b, key.Public(), subjectAltNames{dns: dnsNames, ips: ips}, c.opts.RootCertTTL, c.clock.Now())
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	out := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
	chain, _, err := parseCerts(b.certChainPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	for _, cc := range chain {
		out.Certificate = append(out.Certificate, cc.Raw)
	}
	pkiLog.Infof("Generating istiod-signed cert for %v:\n %s", append(append([]string{}, dnsNames...), ipStrings(ips)...), encodeCert(der))
	return out, nil
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

// EncodeCertificate returns the PEM of the certificates of c (leaf first)
// and of its private key (PKCS#1 for RSA, SEC 1 for ECDSA).
func EncodeCertificate(c tls.Certificate) (certChainPEM, keyPEM []byte, err error) {
	for _, der := range c.Certificate {
		certChainPEM = append(certChainPEM, encodeCert(der)...)
	}
	signer, ok := c.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("unsupported private key type %T", c.PrivateKey)
	}
	keyPEM, err = encodeKey(signer)
	return certChainPEM, keyPEM, err
}
