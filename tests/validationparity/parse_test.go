package validationparity

import (
	"slices"
	"testing"
)

func TestParseIstioctl(t *testing.T) {
	out := `"x/doc00000.yaml" has warnings: 
	* EnvoyFilter/ns/a: EnvoyFilter exposes internal implementation details

Error: 4 errors occurred:
	* VirtualService//parity-marker-00000: http, tcp or tls must be provided in virtual service
	* VirtualService//parity-marker-00001: http, tcp or tls must be provided in virtual service
	* Gateway/ns/gw: gateway must have at least one server
	* Gateway/ns/gw: a message
spanning lines


`
	got, err := parseIstioctl(out, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].rejected || !got[1].rejected ||
		!slices.Equal(got[1].messages, []string{"Gateway/ns/gw: gateway must have at least one server", "Gateway/ns/gw: a message\nspanning lines"}) {
		t.Errorf("verdicts %+v", got)
	}
	for _, bad := range []string{
		"no header",
		"Error: 1 error occurred:\n\t* Gateway/ns/gw: before any marker\n",
		"Error: 1 error occurred:\n\t* VirtualService//parity-marker-00001: skipped marker 0\n",
		"Error: 1 error occurred:\n\t* VirtualService//parity-marker-00000: one marker of two\n",
	} {
		if _, err := parseIstioctl(bad, 2); err == nil {
			t.Errorf("parseIstioctl(%q) accepted it", bad)
		}
	}
}

func TestStripExpectation(t *testing.T) {
	in := "_err: 'spec.x: Required value'\napiVersion: v1\n_errno: kept\nspec:\n  _err: kept\n"
	if got, want := string(stripExpectation([]byte(in))), "apiVersion: v1\n_errno: kept\nspec:\n  _err: kept\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestIstioReasons(t *testing.T) {
	d := document{kind: "AuthorizationPolicy", name: "ap"}
	got := istioReasons(d, []string{
		"AuthorizationPolicy//ap: invalid policy ap.default: `provider.name` must not be empty",
		"AuthorizationPolicy//ap: invalid policy ap.default: invalid `value` for `key` source.ip: 1 error occurred:",
		"bad IP address (x)",
		"AuthorizationPolicy//ap: UriRegexRewrite has errors\nUriRegexRewrite requires both Rewrite and Match fields to be specified",
	})
	want := []string{
		"invalid policy ap.default: `provider.name` must not be empty",
		"bad IP address (x)",
		"UriRegexRewrite has errors",
		"UriRegexRewrite requires both Rewrite and Match fields to be specified",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := ourNamespaceView(d, want[0]), "invalid policy ap.: `provider.name` must not be empty"; got != want {
		t.Errorf("ourNamespaceView: %q, want %q", got, want)
	}
}

func TestDecoderEquivalent(t *testing.T) {
	for reason, want := range map[string]string{
		`cannot parse proto message: unknown field "app" in istio.networking.v1alpha3.EnvoyFilter.EnvoyConfigObjectMatch`:        `.app"`,
		`cannot parse proto message: unknown value "\"BLAH\"" for enum istio.security.v1beta1.PeerAuthentication.MutualTLS.Mode`: `unknown value "BLAH" for enum istio.security.v1beta1.PeerAuthentication.MutualTLS.Mode`,
		`cannot parse proto message: bad Duration: time: invalid duration "apple"`:                                               `invalid duration "apple"`,
		`cannot parse proto message: invalid character 'a' looking for beginning of value`:                                       "",
	} {
		if got, ok := decoderEquivalent(reason); !ok || got != want {
			t.Errorf("decoderEquivalent(%q) = %q, %v; want %q", reason, got, ok, want)
		}
	}
	for _, reason := range []string{"gateway must have at least one server", "cannot parse proto message: something new"} {
		if _, ok := decoderEquivalent(reason); ok {
			t.Errorf("decoderEquivalent(%q) matched", reason)
		}
	}
	if !containsReason([]string{":1 X a/b: error: spec.x: invalid policy"}, "invalid policy") ||
		containsReason([]string{":1 X a/b: warning: spec.x: invalid policy"}, "invalid policy") {
		t.Error("containsReason must look at errors only")
	}
}
