package security

import (
	"crypto/tls"
	"fmt"
	"sort"
)

// Minimum TLS versions istiod's own TLS servers accept (--tls-min-version),
// as pilot-discovery spells them.
const (
	TLSMinVersion12 = "1.2"
	TLSMinVersion13 = "1.3"
)

// The names below are Go's (crypto/tls), not BoringSSL's: they configure
// istiod's own servers (--tls-cipher-suites), not Envoy's listeners.

// TLSCipherSuites parses --tls-cipher-suites: each name must be one of
// crypto/tls's suites, secure or insecure, written exactly (no spaces). The
// IDs keep the order given; nil for no names (Go's defaults then apply).
// The error is pilot-discovery's.
func TLSCipherSuites(names []string) ([]uint16, error) {
	if len(names) == 0 {
		return nil, nil
	}
	known := map[string]uint16{}
	for _, c := range tls.InsecureCipherSuites() {
		known[c.Name] = c.ID
	}
	for _, c := range tls.CipherSuites() {
		known[c.Name] = c.ID
	}
	out := make([]uint16, 0, len(names))
	for _, n := range names {
		id, ok := known[n]
		if !ok {
			return nil, fmt.Errorf("cipher suite %s not supported or doesn't exist", n)
		}
		out = append(out, id)
	}
	return out, nil
}

// TLSMinVersion parses --tls-min-version: 1.2 or 1.3. The error is
// pilot-discovery's.
func TLSMinVersion(v string) (uint16, error) {
	switch v {
	case TLSMinVersion12:
		return tls.VersionTLS12, nil
	case TLSMinVersion13:
		return tls.VersionTLS13, nil
	}
	return tls.VersionTLS12, fmt.Errorf("minimum TLS version: %s is not supported. Only %s and %s are supported",
		v, TLSMinVersion12, TLSMinVersion13)
}

// SecureTLSCipherNames are crypto/tls's secure suites, sorted (the
// "preferred values" of the flag's help).
func SecureTLSCipherNames() []string { return suiteNames(tls.CipherSuites()) }

// InsecureTLSCipherNames are crypto/tls's insecure suites, sorted.
func InsecureTLSCipherNames() []string { return suiteNames(tls.InsecureCipherSuites()) }

func suiteNames(cs []*tls.CipherSuite) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Name)
	}
	sort.Strings(out)
	return out
}
