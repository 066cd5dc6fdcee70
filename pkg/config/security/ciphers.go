package security

import (
	"sort"
	"unicode"
)

// cipherSuites are the suites Envoy's BoringSSL names for TLS 1.2 and
// below without a pre-shared key, the set Istio 1.31 accepts
// (ValidCipherSuites in its pkg/config/security). BoringSSL also knows
// five PSK suites (ECDHE-PSK-AES128-CBC-SHA, ECDHE-PSK-AES256-CBC-SHA,
// ECDHE-PSK-CHACHA20-POLY1305, PSK-AES128-CBC-SHA, PSK-AES256-CBC-SHA);
// Envoy configures no pre-shared keys, so they could never be negotiated:
// Istio leaves them out, and so do we.
var cipherSuites = map[string]bool{
	"ECDHE-ECDSA-AES128-GCM-SHA256": true,
	"ECDHE-RSA-AES128-GCM-SHA256":   true,
	"ECDHE-ECDSA-AES256-GCM-SHA384": true,
	"ECDHE-RSA-AES256-GCM-SHA384":   true,
	"ECDHE-ECDSA-CHACHA20-POLY1305": true,
	"ECDHE-RSA-CHACHA20-POLY1305":   true,
	"ECDHE-ECDSA-AES128-SHA":        true,
	"ECDHE-RSA-AES128-SHA":          true,
	"ECDHE-ECDSA-AES256-SHA":        true,
	"ECDHE-RSA-AES256-SHA":          true,
	"AES128-GCM-SHA256":             true,
	"AES256-GCM-SHA384":             true,
	"AES128-SHA":                    true,
	"AES256-SHA":                    true,
	"DES-CBC3-SHA":                  true,
}

// CipherSuites returns the known suite names, sorted (a new slice each
// call; the caller may keep or change it).
func CipherSuites() []string {
	out := make([]string, 0, len(cipherSuites))
	for s := range cipherSuites {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// IsValidCipherSuite tells whether a tls.cipherSuites entry is accepted: a
// known suite, "" or "ALL", or an entry that starts with neither a letter
// nor a digit. The last are BoringSSL's cipher-list operators ("!X", "-X",
// "+X", "[A|B]" groups), passed through unparsed, as Istio passes them.
func IsValidCipherSuite(s string) bool {
	if s == "" || s == "ALL" {
		return true
	}
	if r := rune(s[0]); !unicode.IsLetter(r) && !unicode.IsNumber(r) {
		return true
	}
	return cipherSuites[s]
}

// FilterCipherSuites is suites without the invalid entries (see
// IsValidCipherSuite) and without repeats, in their order: what a listener
// may send to Envoy without a NACK. Nil for no suites; the input is not
// modified.
func FilterCipherSuites(suites []string) []string {
	if len(suites) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(suites))
	out := make([]string, 0, len(suites))
	for _, s := range suites {
		if IsValidCipherSuite(s) && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// CheckCipherSuites sorts suites into the invalid entries and the repeats
// of valid ones, each sorted and listed once: what validation warns about
// ("ignoring invalid cipher suites: [...]", "ignoring duplicate cipher
// suites: [...]", as Istio words it).
func CheckCipherSuites(suites []string) (invalid, duplicate []string) {
	bad, valid, dup := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range suites {
		switch {
		case !IsValidCipherSuite(s):
			bad[s] = true
		case valid[s]:
			dup[s] = true
		default:
			valid[s] = true
		}
	}
	return sortedKeys(bad), sortedKeys(dup)
}

func sortedKeys(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
