package gateway_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	istio "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pkg/config/security"
)

// The gateway.istio.io/tls-cipher-suites option keeps what the listener
// builders keep and validation accepts, from the one list of
// pkg/config/security: BoringSSL's PSK suites and unknown names are
// dropped, repeats kept once, operators passed through.
func TestCipherSuitesOption(t *testing.T) {
	data, err := os.ReadFile("testdata/tls.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const option = `"ECDHE-RSA-AES128-GCM-SHA256, BOGUS, ECDHE-RSA-AES128-GCM-SHA256"`
	if !strings.Contains(string(data), option) {
		t.Fatalf("testdata/tls.in.yaml no longer has the option %s", option)
	}
	in := append(security.CipherSuites(), "ECDHE-PSK-AES128-CBC-SHA", "ECDHE-PSK-AES256-CBC-SHA",
		"ECDHE-PSK-CHACHA20-POLY1305", "PSK-AES128-CBC-SHA", "PSK-AES256-CBC-SHA", "BOGUS", "!aNULL",
		"AES128-SHA", "PSK-AES128-CBC-SHA")
	data = []byte(strings.Replace(string(data), option, `"`+strings.Join(in, ", ")+`"`, 1))

	out := gateway.Translate(loadSnapshot(t, data), gateway.Options{DomainSuffix: domain})
	var got []string
	found := false
	for _, c := range out.Gateways {
		for _, s := range c.Spec.(*istio.Gateway).GetServers() {
			for _, h := range s.GetHosts() {
				if strings.HasSuffix(h, "/simple.example.com") {
					got, found = s.GetTls().GetCipherSuites(), true
				}
			}
		}
	}
	if !found {
		t.Fatal("no server for simple.example.com")
	}
	if want := security.FilterCipherSuites(in); !reflect.DeepEqual(got, want) {
		t.Errorf("suites:\n got %v\nwant %v", got, want)
	}
}
