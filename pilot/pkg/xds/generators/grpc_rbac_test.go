package generators_test

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbachttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
)

// grpcServerIP and grpcServerInbound: the proxyless server of these tests
// and the listener it asks for.
const (
	grpcServerIP      = "10.244.1.5"
	grpcServerInbound = generators.GRPCServerListenerPrefix + grpcServerIP + ":7070"
)

// grpcServerFilters runs policies (YAML) through the proxyless generators
// and returns the HTTP filters of the inbound listener of a grpc-go server
// (app: xsrv in namespace test).
func grpcServerFilters(t *testing.T, policies string) []*hcm.HttpFilter {
	t.Helper()
	store := memory.New(collections.Pilot)
	for _, d := range crd.Parse([]byte(policies), crd.Options{Domain: "cluster.local"}) {
		if d.Err != nil {
			t.Fatal(d.Err)
		}
		if d.Config != nil {
			if _, err := store.Create(*d.Config); err != nil {
				t.Fatal(err)
			}
		}
	}
	svc := &model.Service{Hostname: "xsrv.test.svc.cluster.local", DefaultAddress: "10.96.0.5",
		Ports:      []*model.Port{{Name: "grpc", Port: 7070, Protocol: protocol.GRPC}},
		Attributes: model.ServiceAttributes{Name: "xsrv", Namespace: "test", ServiceRegistry: model.Kubernetes}}
	disc := &staticDiscovery{services: []*model.Service{svc}, targets: map[string][]model.ServiceTarget{
		grpcServerIP: {{Service: svc, Port: model.ServiceInstancePort{Port: svc.Ports[0], TargetPort: 7070}}},
	}}
	idx := model.NewEndpointIndex()
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: disc, EndpointIndex: idx})
	s := xdstest.NewServer(t)
	gens := &generators.SidecarGenerators{Endpoints: idx, Discovery: disc}
	gens.Register(s.DS)
	gens.RegisterGRPC(s.DS)
	s.DS.InitPushContext(env)
	c := xdstest.Dial(t, s, adsc.Config{NodeID: "sidecar~" + grpcServerIP + "~xsrv-1.test~test.svc.cluster.local",
		Metadata: map[string]any{"GENERATOR": "grpc", "NAMESPACE": "test", "LABELS": map[string]any{"app": "xsrv"}}})
	if err := c.Watch(xds.ListenerType, grpcServerInbound); err != nil {
		t.Fatal(err)
	}
	l, _ := xdstest.Next(t, c).Resources[grpcServerInbound].(*listenerv3.Listener)
	if l == nil {
		t.Fatalf("no listener %s", grpcServerInbound)
	}
	m := &hcm.HttpConnectionManager{}
	if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(m); err != nil {
		t.Fatal(err)
	}
	return m.GetHttpFilters()
}

func filterNames(fs []*hcm.HttpFilter) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.GetName())
	}
	return out
}

func rbacOf(t *testing.T, f *hcm.HttpFilter) *rbachttp.RBAC {
	t.Helper()
	out := &rbachttp.RBAC{}
	if err := f.GetTypedConfig().UnmarshalTo(out); err != nil {
		t.Fatal(err)
	}
	return out
}

func policyNames(r *rbacpb.RBAC) []string {
	var out []string
	for k := range r.GetPolicies() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// grpcUnsupported lists the matchers grpc-go's RBAC engine does not
// evaluate (it skips them, or panics when one sits directly under a not).
func grpcUnsupported(m proto.Message) []string {
	var out []string
	var perm func(*rbacpb.Permission)
	var prin func(*rbacpb.Principal)
	perm = func(p *rbacpb.Permission) {
		switch r := p.GetRule().(type) {
		case *rbacpb.Permission_AndRules:
			for _, c := range r.AndRules.GetRules() {
				perm(c)
			}
		case *rbacpb.Permission_OrRules:
			for _, c := range r.OrRules.GetRules() {
				perm(c)
			}
		case *rbacpb.Permission_NotRule:
			perm(r.NotRule)
		case *rbacpb.Permission_Any, *rbacpb.Permission_Header, *rbacpb.Permission_UrlPath,
			*rbacpb.Permission_DestinationIp, *rbacpb.Permission_DestinationPort:
		default:
			out = append(out, protojson.Format(p))
		}
	}
	prin = func(p *rbacpb.Principal) {
		switch id := p.GetIdentifier().(type) {
		case *rbacpb.Principal_AndIds:
			for _, c := range id.AndIds.GetIds() {
				prin(c)
			}
		case *rbacpb.Principal_OrIds:
			for _, c := range id.OrIds.GetIds() {
				prin(c)
			}
		case *rbacpb.Principal_NotId:
			prin(id.NotId)
		case *rbacpb.Principal_Any, *rbacpb.Principal_Authenticated_, *rbacpb.Principal_DirectRemoteIp,
			*rbacpb.Principal_RemoteIp, *rbacpb.Principal_Header, *rbacpb.Principal_UrlPath:
		default:
			out = append(out, protojson.Format(p))
		}
	}
	for _, p := range m.(*rbacpb.RBAC).GetPolicies() {
		for _, x := range p.GetPermissions() {
			perm(x)
		}
		for _, x := range p.GetPrincipals() {
			prin(x)
		}
	}
	return out
}

const grpcRBACPolicies = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-unary, namespace: test}
spec:
  selector: {matchLabels: {app: xsrv}}
  action: DENY
  rules:
  - to: [{operation: {paths: ["/grpc.testing.TestService/UnaryCall"]}}]
  - when: [{key: "experimental.envoy.filters.http.foo[bar]", notValues: ["baz"]}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: allow-some, namespace: test}
spec:
  selector: {matchLabels: {app: xsrv}}
  rules:
  - to: [{operation: {paths: ["/grpc.testing.TestService/{*}"]}}]
  - when: [{key: "request.auth.claims[group]", notValues: ["guests"]}]
  - from: [{source: {requestPrincipals: ["*"]}}]
  - when: [{key: "request.headers[Host]", values: ["xsrv.test"]}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: audit-all, namespace: test}
spec:
  selector: {matchLabels: {app: xsrv}}
  action: AUDIT
  rules: [{}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-dry-run, namespace: test, annotations: {istio.io/dry-run: "true"}}
spec:
  selector: {matchLabels: {app: xsrv}}
  action: DENY
  rules: [{}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ext, namespace: test}
spec:
  selector: {matchLabels: {app: xsrv}}
  action: CUSTOM
  provider: {name: nowhere}
  rules: [{}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: other-workload, namespace: test}
spec:
  selector: {matchLabels: {app: other}}
  action: DENY
  rules: [{}]
`

// The inbound listener of a proxyless gRPC server carries the workload's
// AuthorizationPolicies as Istio's proxyless generator sends them: one
// RBAC filter for DENY, then one for ALLOW, before the router; no CUSTOM,
// AUDIT or dry-run filter; only rules, policies named <ns>-<name>-<rule>;
// and no matcher grpc-go's RBAC engine would skip or panic on.
func TestGRPCServerListenerRBAC(t *testing.T) {
	fs := grpcServerFilters(t, grpcRBACPolicies)
	if got, want := filterNames(fs), []string{"envoy.filters.http.rbac.DENY", "envoy.filters.http.rbac", "envoy.filters.http.router"}; !slices.Equal(got, want) {
		t.Fatalf("filters %v, want %v", got, want)
	}
	deny, allow := rbacOf(t, fs[0]), rbacOf(t, fs[1])
	for _, r := range []*rbachttp.RBAC{deny, allow} {
		if r.ShadowRules != nil || r.ShadowRulesStatPrefix != "" || r.RulesStatPrefix != "" || r.TrackPerRuleStats {
			t.Errorf("RBAC has more than rules: %v", protojson.Format(r))
		}
		if bad := grpcUnsupported(r.GetRules()); len(bad) > 0 {
			t.Errorf("%v RBAC has matchers grpc-go does not evaluate: %v", r.GetRules().GetAction(), bad)
		}
	}
	if a := deny.GetRules().GetAction(); a != rbacpb.RBAC_DENY {
		t.Errorf("first filter action %v", a)
	}
	if a := allow.GetRules().GetAction(); a != rbacpb.RBAC_ALLOW {
		t.Errorf("second filter action %v", a)
	}
	// no dry-run, AUDIT, CUSTOM or other workload's policy
	if got, want := policyNames(deny.GetRules()), []string{"test-deny-unary-0", "test-deny-unary-1"}; !slices.Equal(got, want) {
		t.Errorf("DENY policies %v, want %v", got, want)
	}
	if got, want := policyNames(allow.GetRules()), []string{"test-allow-some-0", "test-allow-some-1", "test-allow-some-2", "test-allow-some-3"}; !slices.Equal(got, want) {
		t.Errorf("ALLOW policies %v, want %v", got, want)
	}

	// the exact path is a url_path, as on sidecars
	if got := compactJSON(deny.GetRules().GetPolicies()["test-deny-unary-0"]); !strings.Contains(got, `"exact":"/grpc.testing.TestService/UnaryCall"`) {
		t.Errorf("deny-unary rule 0: %s", got)
	}
	// notValues of Envoy filter metadata: nothing on a proxyless server
	// writes it, so "not baz" always holds (not(never)), as in Envoy; not a
	// not_rule directly over metadata, which makes grpc-go panic
	never := func() *rbacpb.Permission {
		return &rbacpb.Permission{Rule: &rbacpb.Permission_NotRule{NotRule: &rbacpb.Permission{Rule: &rbacpb.Permission_Any{Any: true}}}}
	}
	wantMeta := &rbacpb.Permission{Rule: &rbacpb.Permission_AndRules{AndRules: &rbacpb.Permission_Set{Rules: []*rbacpb.Permission{
		{Rule: &rbacpb.Permission_NotRule{NotRule: never()}}}}}}
	if got := deny.GetRules().GetPolicies()["test-deny-unary-1"].GetPermissions(); len(got) != 1 || !proto.Equal(got[0], wantMeta) {
		t.Errorf("deny-unary rule 1 permissions %v, want %v", got, protojson.Format(wantMeta))
	}

	// the path template is the regular expression Envoy's uri_template
	// compiles it to: one segment of path characters
	p0 := allow.GetRules().GetPolicies()["test-allow-some-0"]
	re := findRegex(p0)
	if re == "" {
		t.Fatalf("allow-some rule 0 has no safe_regex: %s", protojson.Format(p0))
	}
	full := regexp.MustCompile("^(?:" + re + ")$")
	for path, want := range map[string]bool{
		"/grpc.testing.TestService/UnaryCall": true, "/grpc.testing.TestService/EmptyCall": true,
		"/grpc.testing.TestService/": false, "/grpc.testing.TestService/a/b": false, "/grpc.testing.OtherService/UnaryCall": false,
		"/grpc.testingXTestService/UnaryCall": false,
	} {
		if got := full.MatchString(path); got != want {
			t.Errorf("template regex %q on %s: %v, want %v", re, path, got, want)
		}
	}
	// JWT claims and request principals: no jwt_authn on a proxyless
	// server, so a claim never matches: "group is not guests" always holds,
	// and "any request principal" never does (grpc-go would drop the
	// metadata matchers from their and_ids and so match every request)
	principals := func(name string) string {
		var b strings.Builder
		for _, p := range allow.GetRules().GetPolicies()[name].GetPrincipals() {
			b.WriteString(compactJSON(p))
		}
		return b.String()
	}
	if got, want := principals("test-allow-some-1"), `{"andIds":{"ids":[{"notId":{"notId":{"any":true}}}]}}`; got != want {
		t.Errorf("allow-some rule 1 principals %s, want %s", got, want)
	}
	if got := principals("test-allow-some-2"); strings.Contains(got, "metadata") || !strings.Contains(got, `"notId":{"any":true}`) {
		t.Errorf("allow-some rule 2 principals %s, want metadata matchers that never match", got)
	}
	// Envoy aliases Host and :authority; grpc-go only knows :authority
	if got := principals("test-allow-some-3"); !strings.Contains(got, `"name":":authority"`) {
		t.Errorf("allow-some rule 3 principals %s, want a :authority header", got)
	}
}

// compactJSON is m as JSON without whitespace (protojson adds some at
// random); the values compared here hold none.
func compactJSON(m proto.Message) string {
	return strings.Join(strings.Fields(protojson.Format(m)), "")
}

func findRegex(p *rbacpb.Policy) string {
	var re string
	var walk func(*rbacpb.Permission)
	walk = func(x *rbacpb.Permission) {
		switch r := x.GetRule().(type) {
		case *rbacpb.Permission_AndRules:
			for _, c := range r.AndRules.GetRules() {
				walk(c)
			}
		case *rbacpb.Permission_OrRules:
			for _, c := range r.OrRules.GetRules() {
				walk(c)
			}
		case *rbacpb.Permission_UrlPath:
			if s := r.UrlPath.GetPath().GetSafeRegex().GetRegex(); s != "" {
				re = s
			}
		}
	}
	for _, x := range p.GetPermissions() {
		walk(x)
	}
	return re
}

// Without policies the listener is the router alone; with ALLOW policies
// only, one ALLOW filter. An ALLOW policy without rules allows nothing, as
// on sidecars (Istio's proxyless generator sends no filter for it, which
// allows everything). A DENY policy whose only rules are dry-run sends no
// filter.
func TestGRPCServerListenerRBACShapes(t *testing.T) {
	if got := filterNames(grpcServerFilters(t, "")); !slices.Equal(got, []string{"envoy.filters.http.router"}) {
		t.Errorf("no policies: filters %v", got)
	}
	fs := grpcServerFilters(t, `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: allow-nothing, namespace: test}
spec: {}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-dry-run, namespace: test, annotations: {istio.io/dry-run: "true"}}
spec: {action: DENY, rules: [{}]}
`)
	if got := filterNames(fs); !slices.Equal(got, []string{"envoy.filters.http.rbac", "envoy.filters.http.router"}) {
		t.Fatalf("allow-nothing: filters %v", got)
	}
	want := &rbacpb.RBAC{Action: rbacpb.RBAC_ALLOW, Policies: map[string]*rbacpb.Policy{"test-allow-nothing-0": {
		Permissions: []*rbacpb.Permission{{Rule: &rbacpb.Permission_NotRule{NotRule: &rbacpb.Permission{Rule: &rbacpb.Permission_Any{Any: true}}}}},
		Principals:  []*rbacpb.Principal{{Identifier: &rbacpb.Principal_NotId{NotId: &rbacpb.Principal{Identifier: &rbacpb.Principal_Any{Any: true}}}}},
	}}}
	if got := rbacOf(t, fs[0]); !proto.Equal(got, &rbachttp.RBAC{Rules: want}) {
		t.Errorf("allow-nothing: %s", protojson.Format(got))
	}
}
