package security_test

import (
	"reflect"
	"testing"

	"github.com/meshplane/istiod/pkg/config/security"
)

// The suites BoringSSL lists that are not PSK suites, as Istio 1.31 lists
// them; the five PSK suites BoringSSL also knows are invalid.
func TestCipherSuites(t *testing.T) {
	want := []string{
		"AES128-GCM-SHA256", "AES128-SHA", "AES256-GCM-SHA384", "AES256-SHA", "DES-CBC3-SHA",
		"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-GCM-SHA384",
		"ECDHE-ECDSA-AES256-SHA", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-AES128-GCM-SHA256",
		"ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-SHA", "ECDHE-RSA-CHACHA20-POLY1305",
	}
	if got := security.CipherSuites(); !reflect.DeepEqual(got, want) {
		t.Errorf("CipherSuites() = %v, want %v", got, want)
	}
	security.CipherSuites()[0] = "changed"
	if security.CipherSuites()[0] != want[0] {
		t.Error("CipherSuites returned shared storage")
	}
	for _, s := range want {
		if !security.IsValidCipherSuite(s) {
			t.Errorf("%s: invalid", s)
		}
	}
	for _, s := range []string{"ECDHE-PSK-AES128-CBC-SHA", "ECDHE-PSK-AES256-CBC-SHA", "ECDHE-PSK-CHACHA20-POLY1305",
		"PSK-AES128-CBC-SHA", "PSK-AES256-CBC-SHA", "NOPE", "ecdhe-rsa-aes128-sha", "TLS_AES_128_GCM_SHA256"} {
		if security.IsValidCipherSuite(s) {
			t.Errorf("%s: valid", s)
		}
	}
	// operators and groups pass unparsed, as do "" and ALL
	for _, s := range []string{"", "ALL", "!aNULL", "-DES-CBC3-SHA", "+AES128-SHA", "[ECDHE-ECDSA-AES128-GCM-SHA256|ECDHE-ECDSA-CHACHA20-POLY1305]"} {
		if !security.IsValidCipherSuite(s) {
			t.Errorf("%q: invalid", s)
		}
	}
}

func TestFilterCipherSuites(t *testing.T) {
	in := []string{"PSK-AES128-CBC-SHA", "AES256-SHA", "NOPE", "!aNULL", "AES128-SHA", "AES256-SHA", "AES128-SHA"}
	orig := append([]string(nil), in...)
	want := []string{"AES256-SHA", "!aNULL", "AES128-SHA"}
	if got := security.FilterCipherSuites(in); !reflect.DeepEqual(got, want) {
		t.Errorf("FilterCipherSuites = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(in, orig) {
		t.Errorf("input modified: %v", in)
	}
	if got := security.FilterCipherSuites(nil); got != nil {
		t.Errorf("FilterCipherSuites(nil) = %v", got)
	}
	if got := security.FilterCipherSuites([]string{"NOPE"}); len(got) != 0 {
		t.Errorf("all invalid: %v", got)
	}
}

func TestCheckCipherSuites(t *testing.T) {
	invalid, dup := security.CheckCipherSuites([]string{"ZZZ", "PSK-AES256-CBC-SHA", "AES256-SHA", "ZZZ",
		"AES256-SHA", "AES256-SHA", "AES128-SHA", "!x", "!x"})
	if want := []string{"PSK-AES256-CBC-SHA", "ZZZ"}; !reflect.DeepEqual(invalid, want) {
		t.Errorf("invalid = %v, want %v", invalid, want)
	}
	if want := []string{"!x", "AES256-SHA"}; !reflect.DeepEqual(dup, want) {
		t.Errorf("duplicate = %v, want %v", dup, want)
	}
	if invalid, dup := security.CheckCipherSuites([]string{"AES128-SHA"}); invalid != nil || dup != nil {
		t.Errorf("all valid: %v %v", invalid, dup)
	}
}
