package security_test

import (
	"crypto/tls"
	"reflect"
	"slices"
	"testing"

	"github.com/meshplane/istiod/pkg/config/security"
)

// --tls-cipher-suites takes crypto/tls's names, secure and insecure, in
// the order given; anything else is refused with pilot-discovery's error.
func TestTLSCipherSuites(t *testing.T) {
	got, err := security.TLSCipherSuites([]string{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_RSA_WITH_AES_128_CBC_SHA256"})
	want := []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, tls.TLS_RSA_WITH_AES_128_CBC_SHA256}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, %v", got, err)
	}
	if got, err := security.TLSCipherSuites(nil); got != nil || err != nil {
		t.Errorf("none: %v %v", got, err)
	}
	for _, bad := range []string{"ECDHE-RSA-AES128-GCM-SHA256", " TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", ""} {
		_, err := security.TLSCipherSuites([]string{bad})
		if err == nil || err.Error() != "cipher suite "+bad+" not supported or doesn't exist" {
			t.Errorf("%q: %v", bad, err)
		}
	}
	secure, insecure := security.SecureTLSCipherNames(), security.InsecureTLSCipherNames()
	if !slices.IsSorted(secure) || !slices.Contains(secure, "TLS_AES_128_GCM_SHA256") || !slices.Contains(insecure, "TLS_RSA_WITH_RC4_128_SHA") {
		t.Errorf("names %v %v", secure, insecure)
	}
}

func TestTLSMinVersion(t *testing.T) {
	for v, want := range map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13} {
		if got, err := security.TLSMinVersion(v); got != want || err != nil {
			t.Errorf("%s: %v %v", v, got, err)
		}
	}
	for _, v := range []string{"1.1", "", "1.3 "} {
		if _, err := security.TLSMinVersion(v); err == nil ||
			err.Error() != "minimum TLS version: "+v+" is not supported. Only 1.2 and 1.3 are supported" {
			t.Errorf("%q: %v", v, err)
		}
	}
}
