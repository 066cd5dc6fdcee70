package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	root := NewRootCommand(&out, &errb)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	code = 0
	if err := root.Execute(); err != nil {
		code = 1
		if ee, ok := err.(exitError); ok {
			code = ee.code
		}
	}
	return code, out.String(), errb.String()
}

// The bundled example is valid; its analysis finds only that the
// namespace Sidecar narrows egress under ALLOW_ANY (which is no firewall).
func TestValidateBundledExample(t *testing.T) {
	code, out, errOut := runCLI(t, "", "validate", "-f", "../../../manifests/examples/bookinfo")
	want := "analysis: Warning [MP0001] (Sidecar bookinfo/default) Sidecar egress is not a firewall: unlisted destinations still pass through " +
		"(outboundTrafficPolicy is ALLOW_ANY); set outboundTrafficPolicy.mode REGISTRY_ONLY to block them\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, output:\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "0 rejected") {
		t.Errorf("summary %q", errOut)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	bad := `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: r, namespace: ns}
spec:
  hosts: [r]
  http:
  - routez: [{destination: {host: r}}]
---
apiVersion: networking.istio.io/v1
kind: EnvoyFilter
metadata: {name: ef, namespace: ns}
spec: {}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: s, namespace: ns}
spec: {outboundTrafficPolicy: {mode: REGISTRY_ONLYY}}
`
	good := `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: d, namespace: ns}
spec: {host: d}
`
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "good.yml"), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not config"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", "validate", "-f", dir)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	badPath := filepath.Join(dir, "bad.yaml")
	for _, want := range []string{
		badPath + `:1 VirtualService ns/r: error: unknown field "spec.http[0].routez"`,
		badPath + `:1 VirtualService ns/r: error: spec.http[0]: HTTP route, redirect or direct_response is required`,
		badPath + `:9 EnvoyFilter ns/ef: warning: unknown kind networking.istio.io/v1/EnvoyFilter, skipped`,
		badPath + `:14 Sidecar ns/s: error: spec.outboundTrafficPolicy.mode: unknown value "REGISTRY_ONLYY" for enum istio.networking.v1alpha3.OutboundTrafficPolicy.Mode`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("output lacks line\n%s\ngot:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "1 objects valid, 2 rejected") {
		t.Errorf("summary %q", errOut)
	}
}

func TestValidateStdinAndMissingFile(t *testing.T) {
	code, _, _ := runCLI(t, "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d}\nspec: {host: d}\n", "validate", "-f", "-")
	if code != 0 {
		t.Errorf("stdin: exit %d", code)
	}
	code, _, errOut := runCLI(t, "", "validate", "-f", "/nonexistent/x.yaml")
	if code != 1 || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: exit %d, %q", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "", "version", "-o", "json")
	if code != 0 || !strings.Contains(out, `"istioCompatibility": "1.31"`) {
		t.Errorf("exit %d output %q", code, out)
	}
}

// istiod validate lists the policies Istio would accept and ignore, as
// istiod lists them on /debug/warningz.
func TestValidateListsIgnoredPolicies(t *testing.T) {
	dir := t.TempDir()
	in := `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: root-selector, namespace: istio-system}
spec:
  selector: {matchLabels: {app: x}}
  mtls: {mode: STRICT}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ext, namespace: ns}
spec:
  action: CUSTOM
  provider: {name: nope}
  rules: [{}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: http-only, namespace: ns}
spec:
  action: DENY
  rules: [{to: [{operation: {paths: ["/admin"]}}]}]
`
	if err := os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "", "validate", "-f", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{
		`analysis: Warning [custom_provider_not_ext_authz] (AuthorizationPolicy ns/ext spec.provider.name) mesh config extensionProviders has no provider "nope"`,
		`analysis: Warning [peer_authentication_selector_in_root_namespace] (PeerAuthentication istio-system/root-selector spec.selector)`,
		`analysis: Warning [policy_translation] AuthorizationPolicy ns/http-only rule 0: field to[0].operation.paths is HTTP-only and does not apply to TCP traffic`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// The problems of a multi-document file are located by their line in the
// file: where the document starts and, for a syntax error, where it is.
func TestValidateLinesCountFromTheFile(t *testing.T) {
	dir := t.TempDir()
	in := `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: bookinfo}
spec:
  host: reviews
  subsets:
  - name: v1
    labels: {version: v1}
  - name: v2
    labels: {version: v2}
---
# reviews routing
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: reviews
  namespace: bookinfo
spec:
  hosts: [reviews]
  http: - route: [{destination: {host: reviews, subset: v1}}]
`
	name := filepath.Join(dir, "routing.yaml")
	if err := os.WriteFile(name, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", "validate", "-f", name)
	want := name + ":12 <unknown>: error: invalid YAML: line 20: block sequence entries are not allowed in this context\n"
	if code != 1 || out != want {
		t.Errorf("exit %d, output\n%q\nwant\n%q\n%s", code, out, want, errOut)
	}
}
