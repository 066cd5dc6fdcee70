package authz_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	authzpb "istio.io/api/security/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/security/authz"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/tests/golden"
	"github.com/meshplane/istiod/tests/istiobin"
	"github.com/meshplane/istiod/tests/refdata"
)

// The cases of Istio 1.31's authorization builder tests
// (pilot/pkg/security/authz/builder/builder_test.go), run against this
// package: the same input policies (testdata/{http,tcp}/*-in.yaml of the
// istio.io/istio module), the same options (trust domain bundle, mesh
// extension providers, CUSTOM or not), and Istio's expected filters
// (*-out.yaml, *-out1.yaml, *-out2.yaml) compared with proto.Equal.
//
// Istio's test selects the policies of a workload in namespace foo with
// labels app=httpbin,version=v1, ordered by creation time then name (no
// input sets a creation time). It runs a CUSTOM builder (only CUSTOM
// policies) when the case names a mesh config and an ALLOW/DENY/AUDIT one
// otherwise; ours builds both at once, so a CUSTOM case compares our Custom
// filters and any other case our Local ones. Its HTTP cases run twice, the
// second time against the extended-*-out*.yaml files with the same options;
// so do these.

// istioBuilderCase is one case of Istio's builder test.
type istioBuilderCase struct {
	name  string
	tcp   bool
	input string
	want  []string
	// trustDomain and aliases are Istio's trustdomain.NewBundle arguments;
	// empty trustDomain is its zero Bundle (no alias rewriting, as our
	// default cluster.local without aliases).
	trustDomain string
	aliases     []string
	// mesh names the extension providers; non-nil makes it a CUSTOM case.
	mesh *meshconfig.MeshConfig
}

// istioBuilderAllowed are the cases where ours deliberately differs from
// Istio's expected output, with the reason. The test fails when one of them
// starts matching, so the list stays exact.
var istioBuilderAllowed = map[string]string{
	// Not a case of Istio's builder_test.go: a file left over from proxies
	// before 1.11, which matched hosts with case-insensitive regexes and put
	// shadowRulesStatPrefix on every filter. Istio 1.31 itself no longer
	// produces it (its allow-full-rule-out.yaml matches hosts with
	// ignoreCase string matchers, as we do); we do not support proxies that
	// old.
	"http/allow-host-before-111": "pre-1.11 proxy output, not produced by Istio 1.31",
}

func istioBuilderCases() []istioBuilderCase {
	grpcNoNamespace := &meshconfig.MeshConfig{ExtensionProviders: []*meshconfig.MeshConfig_ExtensionProvider{{
		Name: "default",
		Provider: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzGrpc{
			EnvoyExtAuthzGrpc: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationGrpcProvider{
				Service: "my-custom-ext-authz.foo.svc.cluster.local", Port: 9000, FailOpen: true, StatusOnError: "403",
			},
		},
	}}}
	grpc := &meshconfig.MeshConfig{ExtensionProviders: []*meshconfig.MeshConfig_ExtensionProvider{{
		Name: "default",
		Provider: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzGrpc{
			EnvoyExtAuthzGrpc: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationGrpcProvider{
				Service: "foo/my-custom-ext-authz.foo.svc.cluster.local", Port: 9000,
				Timeout:  &durationpb.Duration{Nanos: 2000 * 1000},
				FailOpen: true, StatusOnError: "403",
				IncludeRequestBodyInCheck: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationRequestBody{
					MaxRequestBytes: 4096, AllowPartialMessage: true,
				},
			},
		},
	}}}
	httpProvider := &meshconfig.MeshConfig{ExtensionProviders: []*meshconfig.MeshConfig_ExtensionProvider{{
		Name: "default",
		Provider: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzHttp{
			EnvoyExtAuthzHttp: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationHttpProvider{
				Service: "foo/my-custom-ext-authz.foo.svc.cluster.local", Port: 9000,
				Timeout:  &durationpb.Duration{Seconds: 10},
				FailOpen: true, StatusOnError: "403", PathPrefix: "/check",
				IncludeRequestHeadersInCheck: []string{"x-custom-id", "x-prefix-*", "*-suffix"},
				//nolint:staticcheck // the deprecated field must lose to IncludeRequestHeadersInCheck
				IncludeHeadersInCheck:           []string{"should-not-include-when-IncludeRequestHeadersInCheck-is-set"},
				IncludeAdditionalHeadersInCheck: map[string]string{"x-header-1": "value-1", "x-header-2": "value-2"},
				IncludeRequestBodyInCheck: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationRequestBody{
					MaxRequestBytes: 2048, AllowPartialMessage: true, PackAsBytes: true,
				},
				HeadersToUpstreamOnAllow:   []string{"Authorization", "x-prefix-*", "*-suffix"},
				HeadersToDownstreamOnDeny:  []string{"Set-cookie", "x-prefix-*", "*-suffix"},
				HeadersToDownstreamOnAllow: []string{"Set-cookie", "x-prefix-*", "*-suffix"},
			},
		},
	}}}
	invalid := &meshconfig.MeshConfig{ExtensionProviders: []*meshconfig.MeshConfig_ExtensionProvider{{
		Name: "default",
		Provider: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzHttp{
			EnvoyExtAuthzHttp: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationHttpProvider{
				Service: "foo/my-custom-ext-authz", Port: 999999, PathPrefix: "check", StatusOnError: "999",
			},
		},
	}}}
	// simple: <name>-in.yaml → <name>-out.yaml.
	simple := func(tcp bool, name string) istioBuilderCase {
		return istioBuilderCase{name: name, tcp: tcp, input: name + "-in.yaml", want: []string{name + "-out.yaml"}}
	}
	// two: <name>-in.yaml → <name>-out1.yaml, <name>-out2.yaml.
	two := func(tcp bool, name string) istioBuilderCase {
		return istioBuilderCase{name: name, tcp: tcp, input: name + "-in.yaml", want: []string{name + "-out1.yaml", name + "-out2.yaml"}}
	}
	custom := func(name string, mesh *meshconfig.MeshConfig, input string, want ...string) istioBuilderCase {
		return istioBuilderCase{name: name, input: input, want: want, mesh: mesh}
	}
	td := func(name, trustDomain string, aliases []string, file string) istioBuilderCase {
		c := simple(false, file)
		c.name, c.trustDomain, c.aliases = name, trustDomain, aliases
		return c
	}
	return []istioBuilderCase{
		simple(false, "allow-empty-rule"),
		simple(false, "allow-full-rule"),
		simple(false, "allow-nil-rule"),
		simple(false, "allow-path"),
		simple(false, "audit-full-rule"),
		custom("custom-grpc-provider-no-namespace", grpcNoNamespace, "custom-simple-http-in.yaml",
			"custom-grpc-provider-no-namespace-out1.yaml", "custom-grpc-provider-no-namespace-out2.yaml"),
		custom("custom-grpc-provider", grpc, "custom-simple-http-in.yaml",
			"custom-grpc-provider-out1.yaml", "custom-grpc-provider-out2.yaml"),
		custom("custom-http-provider", httpProvider, "custom-simple-http-in.yaml",
			"custom-http-provider-out1.yaml", "custom-http-provider-out2.yaml"),
		custom("custom-bad-multiple-providers", httpProvider, "custom-bad-multiple-providers-in.yaml",
			"custom-bad-multiple-providers-out1.yaml", "custom-bad-multiple-providers-out2.yaml"),
		custom("custom-bad-invalid-config", invalid, "custom-simple-http-in.yaml", "custom-bad-out.yaml"),
		two(false, "deny-and-allow"),
		simple(false, "deny-empty-rule"),
		two(false, "dry-run-allow-and-deny"),
		simple(false, "dry-run-allow"),
		simple(false, "dry-run-mix"),
		simple(false, "multiple-policies"),
		simple(false, "single-policy"),
		td("trust-domain-one-alias", "td1", []string{"cluster.local"}, "simple-policy-td-aliases"),
		td("trust-domain-multiple-aliases", "td1", []string{"cluster.local", "some-td"}, "simple-policy-multiple-td-aliases"),
		td("trust-domain-wildcard-in-principal", "td1", []string{"foobar"}, "simple-policy-principal-with-wildcard"),
		td("trust-domain-aliases-in-source-principal", "new-td", []string{"old-td", "some-trustdomain"}, "td-aliases-source-principal"),
		simple(false, "trust-domains"),
		// Not run by Istio's test (see istioBuilderAllowed).
		simple(false, "allow-host-before-111"),

		simple(true, "allow-both-http-tcp"),
		simple(true, "allow-only-http"),
		simple(true, "audit-both-http-tcp"),
		{name: "custom-both-http-tcp", tcp: true, input: "custom-both-http-tcp-in.yaml", mesh: grpc,
			want: []string{"custom-both-http-tcp-out1.yaml", "custom-both-http-tcp-out2.yaml"}},
		// An HTTP provider has no TCP filters.
		{name: "custom-only-http", tcp: true, input: "custom-only-http-in.yaml", mesh: httpProvider, want: []string{}},
		simple(true, "deny-both-http-tcp"),
		simple(true, "dry-run-mix"),
	}
}

// istioModuleDir returns the istio.io/istio module (tests/istiobin.Version)
// in the module cache; missing, it fails the test, or skips it with
// ISTIOD_SKIP_REFERENCE=1.
func istioModuleDir(t *testing.T) string {
	t.Helper()
	version := istiobin.Version
	if v := os.Getenv(istiobin.VersionEnv); v != "" {
		version = v
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	dir := filepath.Join(strings.TrimSpace(string(out)), "istio.io", "istio@"+version)
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "pilot/pkg/security/authz/builder/testdata"))
	}
	if err != nil {
		msg := fmt.Sprintf("istio.io/istio@%s is not in the module cache (%v); run `go mod download istio.io/istio@%s`", version, err, version)
		if os.Getenv(refdata.SkipEnv) == "1" {
			t.Skip(msg)
		}
		t.Fatalf("%s (or set %s=1 to skip)", msg, refdata.SkipEnv)
	}
	return dir
}

// TestIstioBuilderCases runs every case of Istio's builder test and checks
// that every file of its testdata belongs to a case.
func TestIstioBuilderCases(t *testing.T) {
	base := filepath.Join(istioModuleDir(t), "pilot/pkg/security/authz/builder/testdata")
	used := map[string]bool{}
	for _, c := range istioBuilderCases() {
		dir := "http"
		if c.tcp {
			dir = "tcp"
		}
		key := dir + "/" + c.name
		used[dir+"/"+c.input] = true
		wantSets := [][]string{c.want}
		if !c.tcp {
			ext := make([]string, len(c.want))
			for i, w := range c.want {
				ext[i] = "extended-" + w
			}
			if c.name != "allow-host-before-111" {
				wantSets = append(wantSets, ext)
			}
		}
		for _, ws := range wantSets {
			for _, w := range ws {
				used[dir+"/"+w] = true
			}
		}
		t.Run(key, func(t *testing.T) {
			policies := istioCasePolicies(t, filepath.Join(base, dir, c.input))
			mc := &meshconfig.MeshConfig{TrustDomain: c.trustDomain, TrustDomainAliases: c.aliases}
			if c.mesh != nil {
				mc.ExtensionProviders = c.mesh.ExtensionProviders
			}
			b := authz.New(authz.Options{Mesh: mc, LookupCluster: istioCaseLookup})
			var got []proto.Message
			if c.tcp {
				fs := b.BuildTCP(policies)
				got = messages(fs.Local)
				if c.mesh != nil {
					got = messages(fs.Custom)
				}
			} else {
				fs := b.BuildHTTP(policies)
				got = messages(fs.Local)
				if c.mesh != nil {
					got = messages(fs.Custom)
				}
			}
			var diffs []string
			for _, ws := range wantSets {
				diffs = append(diffs, compareFilters(t, got, filepath.Join(base, dir), ws, c.tcp)...)
			}
			reason, allowed := istioBuilderAllowed[key]
			switch {
			case allowed && len(diffs) == 0:
				t.Errorf("allowed difference %q no longer differs: remove it from istioBuilderAllowed", reason)
			case allowed:
				t.Logf("allowed difference (%s):\n%s", reason, strings.Join(diffs, "\n"))
			case len(diffs) > 0:
				t.Error(strings.Join(diffs, "\n"))
			}
		})
	}
	for _, dir := range []string{"http", "tcp"} {
		entries, err := os.ReadDir(filepath.Join(base, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !used[dir+"/"+e.Name()] {
				t.Errorf("%s/%s belongs to no case", dir, e.Name())
			}
		}
	}
	for k := range istioBuilderAllowed {
		found := false
		for _, c := range istioBuilderCases() {
			found = found || k == map[bool]string{false: "http/", true: "tcp/"}[c.tcp]+c.name
		}
		if !found {
			t.Errorf("istioBuilderAllowed names no case: %s", k)
		}
	}
}

// istioCasePolicies parses the AuthorizationPolicies of an input and
// selects those of Istio's test workload, in Istio's order.
func istioCasePolicies(t *testing.T, file string) []config.Config {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "httpbin", "version": "v1"}
	var out []config.Config
	for _, d := range crd.Parse(b, crd.Options{Domain: "cluster.local"}) {
		if d.Err != nil {
			t.Fatalf("%s: %s: %v", file, d.Where(), d.Err)
		}
		if d.Config == nil || d.Config.GroupVersionKind.Kind != "AuthorizationPolicy" {
			t.Fatalf("%s: %s: not an AuthorizationPolicy", file, d.Where())
		}
		if d.Config.Namespace != "foo" {
			continue
		}
		ok := true
		for k, v := range d.Config.Spec.(*authzpb.AuthorizationPolicy).GetSelector().GetMatchLabels() {
			ok = ok && labels[k] == v
		}
		if ok {
			out = append(out, *d.Config)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// istioCaseLookup resolves services as Istio's test push context does: one
// service, my-custom-ext-authz.foo.svc.cluster.local in namespace foo.
func istioCaseLookup(service string, port uint32) (string, string, error) {
	const known = "my-custom-ext-authz.foo.svc.cluster.local"
	host := service
	if ns, h, ok := strings.Cut(service, "/"); ok {
		if ns != "foo" {
			return "", "", fmt.Errorf("could not find service %s", service)
		}
		host = h
	}
	if host != known {
		return "", "", fmt.Errorf("could not find service %s in Istio service registry", service)
	}
	return host, fmt.Sprintf("outbound|%d||%s", port, host), nil
}

func messages[M proto.Message](ms []M) []proto.Message {
	out := make([]proto.Message, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

// compareFilters compares our filters with Istio's expected files and
// returns the differences: names and typed configs (unpacked, so that
// serialisation order does not matter) with proto.Equal, then the rest of
// each filter; a difference comes with a protojson diff.
func compareFilters(t *testing.T, got []proto.Message, dir string, wantFiles []string, tcp bool) []string {
	t.Helper()
	if len(got) != len(wantFiles) {
		return []string{fmt.Sprintf("got %d filters, want %d (%v):\n%s", len(got), len(wantFiles), wantFiles, renderAll(got))}
	}
	var out []string
	for i, f := range wantFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSON(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var want proto.Message = &hcm.HttpFilter{}
		if tcp {
			want = &listener.Filter{}
		}
		if err := protojson.Unmarshal(js, want); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !filterEqual(t, got[i], want) {
			d := golden.Diff("filter", jsonValue(t, got[i]), jsonValue(t, want))
			out = append(out, fmt.Sprintf("%s: %d differences:\n%s", f, len(d), strings.Join(d, "\n")))
		}
	}
	return out
}

type typedFilter interface {
	proto.Message
	GetTypedConfig() *anypb.Any
}

// filterEqual compares two filters, their typed configs unpacked.
func filterEqual(t *testing.T, got, want proto.Message) bool {
	t.Helper()
	g, gok := got.(typedFilter)
	w, wok := want.(typedFilter)
	if !gok || !wok || (g.GetTypedConfig() == nil) != (w.GetTypedConfig() == nil) {
		return proto.Equal(got, want)
	}
	if g.GetTypedConfig() != nil {
		gc, err := g.GetTypedConfig().UnmarshalNew()
		if err != nil {
			t.Fatal(err)
		}
		wc, err := w.GetTypedConfig().UnmarshalNew()
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(gc, wc) {
			return false
		}
	}
	// The rest, without the typed configs.
	gr, wr := proto.Clone(got), proto.Clone(want)
	for _, m := range []proto.Message{gr, wr} {
		r := m.ProtoReflect()
		r.Clear(r.Descriptor().Fields().ByName("typed_config"))
	}
	return proto.Equal(gr, wr)
}

func jsonValue(t *testing.T, m proto.Message) any {
	t.Helper()
	b, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func renderAll(ms []proto.Message) string {
	var out []string
	for _, m := range ms {
		out = append(out, protojson.Format(m))
	}
	return strings.Join(out, "\n")
}
