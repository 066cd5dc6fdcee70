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
