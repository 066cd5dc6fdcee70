package generators_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	security "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/security/authz"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

var policyT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func selectApp(app string) *typev1beta1.WorkloadSelector {
	return &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": app}}
}

func mtls(m security.PeerAuthentication_MutualTLS_Mode) *security.PeerAuthentication_MutualTLS {
	return &security.PeerAuthentication_MutualTLS{Mode: m}
}

// policyEnv is productpage (10.244.0.10, target port 9080) in bookinfo with
// the policies of a mesh that exercises every part of the report.
func policyEnv(t *testing.T) (*model.Environment, *generators.SidecarGenerators) {
	t.Helper()
	store := memory.New(collections.Pilot)
	age := 0
	put := func(g config.GroupVersionKind, ns, name string, spec config.Spec, annotations ...string) {
		t.Helper()
		age++
		cfg := config.Config{Meta: config.Meta{GroupVersionKind: g, Namespace: ns, Name: name, CreationTimestamp: policyT0.Add(time.Duration(age) * time.Second)}, Spec: spec}
		if len(annotations) == 2 {
			cfg.Annotations = map[string]string{annotations[0]: annotations[1]}
		}
		if _, err := store.Create(cfg); err != nil {
			t.Fatal(err)
		}
	}
	put(gvk.PeerAuthentication, "istio-system", "default", &security.PeerAuthentication{Mtls: mtls(security.PeerAuthentication_MutualTLS_STRICT)})
	put(gvk.PeerAuthentication, "bookinfo", "ns", &security.PeerAuthentication{Mtls: mtls(security.PeerAuthentication_MutualTLS_PERMISSIVE),
		PortLevelMtls: map[uint32]*security.PeerAuthentication_MutualTLS{9080: mtls(security.PeerAuthentication_MutualTLS_STRICT)}})
	put(gvk.PeerAuthentication, "bookinfo", "ns-newer", &security.PeerAuthentication{Mtls: mtls(security.PeerAuthentication_MutualTLS_DISABLE)})
	put(gvk.PeerAuthentication, "bookinfo", "productpage", &security.PeerAuthentication{Selector: selectApp("productpage"),
		PortLevelMtls: map[uint32]*security.PeerAuthentication_MutualTLS{
			9080:  mtls(security.PeerAuthentication_MutualTLS_DISABLE),
			15000: mtls(security.PeerAuthentication_MutualTLS_UNSET),
		}})
	put(gvk.RequestAuthentication, "bookinfo", "jwt", &security.RequestAuthentication{Selector: selectApp("productpage"),
		JwtRules: []*security.JWTRule{{Issuer: "https://issuer.example", Jwks: `{"keys":[]}`}}})
	put(gvk.AuthorizationPolicy, "bookinfo", "allow", &security.AuthorizationPolicy{Selector: selectApp("productpage"), Rules: []*security.Rule{{
		From: []*security.Rule_From{{Source: &security.Source{Principals: []string{"cluster.local/ns/bookinfo/sa/gateway"}}}},
		To:   []*security.Rule_To{{Operation: &security.Operation{Methods: []string{"GET"}}}},
	}}})
	put(gvk.AuthorizationPolicy, "istio-system", "deny-foreign", &security.AuthorizationPolicy{Action: security.AuthorizationPolicy_DENY,
		Rules: []*security.Rule{{From: []*security.Rule_From{{Source: &security.Source{NotNamespaces: []string{"bookinfo", "istio-system"}}}}}}})
	put(gvk.AuthorizationPolicy, "bookinfo", "audit", &security.AuthorizationPolicy{Action: security.AuthorizationPolicy_AUDIT, Rules: []*security.Rule{{}}})
	put(gvk.AuthorizationPolicy, "bookinfo", "ext", &security.AuthorizationPolicy{Action: security.AuthorizationPolicy_CUSTOM, Rules: []*security.Rule{{}},
		ActionDetail: &security.AuthorizationPolicy_Provider{Provider: &security.AuthorizationPolicy_ExtensionProvider{Name: "missing"}}})
	put(gvk.AuthorizationPolicy, "bookinfo", "bad-key", &security.AuthorizationPolicy{Rules: []*security.Rule{
		{When: []*security.Condition{{Key: "destination.labels[app]", Values: []string{"x"}}}}}})
	put(gvk.AuthorizationPolicy, "bookinfo", "dry", &security.AuthorizationPolicy{Action: security.AuthorizationPolicy_DENY, Rules: []*security.Rule{{}}},
		"istio.io/dry-run", "true")
	put(gvk.AuthorizationPolicy, "bookinfo", "reviews-only", &security.AuthorizationPolicy{Selector: selectApp("reviews")})

	pp := bookSvc("productpage", "10.96.10.10", httpPort(9080))
	idx := model.NewEndpointIndex()
	idx.UpdateServiceEndpoints(model.NewShardKey(model.Kubernetes, "Kubernetes"), pp.Hostname, "bookinfo", []*model.IstioEndpoint{{
		Addresses: []string{"10.244.0.10"}, EndpointPort: 9080, ServicePortName: "http", Namespace: "bookinfo",
		Labels: map[string]string{"app": "productpage", "version": "v1"}, HealthStatus: model.Healthy}})
	disc := &staticDiscovery{services: []*model.Service{pp}, targets: map[string][]model.ServiceTarget{
		"10.244.0.10": {{Service: pp, Port: model.ServiceInstancePort{Port: pp.Ports[0], TargetPort: 9080}}},
	}}
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: disc, EndpointIndex: idx})
	return env, &generators.SidecarGenerators{Endpoints: idx, Discovery: disc}
}

func productpageProxy() *model.Proxy {
	return &model.Proxy{Type: model.SidecarProxy, ID: "productpage-v1-abc.bookinfo", ConfigNamespace: "bookinfo",
		IPAddresses: []string{"10.244.0.10"}, Labels: map[string]string{"app": "productpage", "version": "v1"}}
}

func TestPolicyReportPeerAuthentication(t *testing.T) {
	env, gens := policyEnv(t)
	r := gens.PolicyReport(model.InitContext(env, nil, nil), productpageProxy())
	pa := r.PeerAuthentication
	if w := pa.Workload; w.Mode.String() != "PERMISSIVE" || w.Level != "namespace" || w.DecidedBy != "bookinfo/ns" {
		t.Errorf("workload %+v", w)
	}
	var ports []string
	for _, p := range pa.Ports {
		ports = append(ports, fmt.Sprintf("%d %s %s %s %s", p.Port, p.Protocol, p.Mode, p.Level, p.DecidedBy))
	}
	want := []string{"9080 HTTP DISABLE port bookinfo/productpage", "15000  PERMISSIVE namespace bookinfo/ns"}
	if !slices.Equal(ports, want) {
		t.Errorf("ports\n got %q\nwant %q", ports, want)
	}
	var pols []string
	for _, p := range pa.Policies {
		pols = append(pols, fmt.Sprintf("%s %s %s applied=%v ignored=%q", p.Name, p.Level, p.Mode, p.Applied, p.Ignored))
	}
	want = []string{
		`istio-system/default mesh STRICT applied=true ignored=""`,
		`bookinfo/ns namespace PERMISSIVE applied=true ignored="portLevelMtls: only a workload policy's port-level settings apply"`,
		`bookinfo/ns-newer namespace DISABLE applied=false ignored="the older namespace-level PeerAuthentication bookinfo/ns applies instead"`,
		`bookinfo/productpage workload UNSET applied=true ignored=""`,
	}
	if !slices.Equal(pols, want) {
		t.Errorf("policies\n got %q\nwant %q", pols, want)
	}
}

func TestPolicyReportAuthorization(t *testing.T) {
	env, gens := policyEnv(t)
	push := model.InitContext(env, nil, nil)
	r := gens.PolicyReport(push, productpageProxy())

	if len(r.RequestAuthentications) != 1 || r.RequestAuthentications[0].Name != "bookinfo/jwt" ||
		!slices.Equal(r.RequestAuthentications[0].Issuers, []string{"https://issuer.example"}) {
		t.Errorf("request authentications %+v", r.RequestAuthentications)
	}
	var order []string
	for _, a := range r.AuthorizationPolicies {
		order = append(order, a.Action+" "+a.Name)
	}
	// CUSTOM, DENY, ALLOW, AUDIT; the proxy's namespace before the root
	// namespace, oldest first; reviews-only selects someone else
	want := []string{"CUSTOM bookinfo/ext", "DENY bookinfo/dry", "DENY istio-system/deny-foreign", "ALLOW bookinfo/allow", "ALLOW bookinfo/bad-key", "AUDIT bookinfo/audit"}
	if !slices.Equal(order, want) {
		t.Errorf("evaluation order\n got %q\nwant %q", order, want)
	}
	byName := map[string]generators.AuthorizationPolicyEntry{}
	for _, a := range r.AuthorizationPolicies {
		byName[a.Name] = a
	}
	if a := byName["bookinfo/allow"]; a.Level != "workload" || !slices.Equal(a.HTTPRules, []string{"ns[bookinfo]-policy[allow]-rule[0]"}) || len(a.TCPRules) != 0 {
		// the ALLOW rule needs an HTTP method, so TCP chains drop it
		t.Errorf("allow %+v", a)
	}
	if a := byName["bookinfo/dry"]; !a.DryRun || !slices.Equal(a.HTTPRules, []string{"ns[bookinfo]-policy[dry]-rule[0]"}) {
		t.Errorf("dry %+v", a)
	}
	if a := byName["bookinfo/bad-key"]; len(a.HTTPRules) != 0 {
		t.Errorf("a rule with an unknown when key is dropped: %+v", a)
	}
	if a := byName["istio-system/deny-foreign"]; a.Level != "mesh" || len(a.TCPRules) != 1 {
		t.Errorf("deny-foreign %+v", a)
	}

	var filters []string
	for _, f := range r.HTTPFilters {
		filters = append(filters, f.Name+" "+f.Action)
		if len(f.Config) == 0 {
			t.Errorf("%s has no config", f.Name)
		}
	}
	want = []string{"envoy.filters.http.rbac DENY", "envoy.filters.http.jwt_authn ", "envoy.filters.http.rbac LOG",
		"envoy.filters.http.rbac DENY", "envoy.filters.http.rbac ALLOW"}
	if !slices.Equal(filters, want) {
		t.Errorf("http filters\n got %q\nwant %q", filters, want)
	}
	if deny := r.HTTPFilters[3]; !slices.Equal(deny.Rules, []string{"ns[istio-system]-policy[deny-foreign]-rule[0]"}) ||
		!slices.Equal(deny.ShadowRules, []string{"ns[bookinfo]-policy[dry]-rule[0]"}) {
		t.Errorf("deny filter %+v", deny)
	}
	if len(r.TCPFilters) == 0 || r.TCPFilters[0].Name != "envoy.filters.network.rbac" {
		t.Errorf("tcp filters %+v", r.TCPFilters)
	}

	var warnings []string
	for _, w := range r.Warnings {
		warnings = append(warnings, strings.Join(w.Chains, ",")+" "+w.Policy+" "+w.Field)
	}
	for _, w := range []string{"http,tcp bookinfo/bad-key when[0]", "http,tcp bookinfo/ext "} {
		if !slices.Contains(warnings, w) {
			t.Errorf("warnings %q lack %q", warnings, w)
		}
	}
	var problems []string
	for _, p := range r.Problems {
		problems = append(problems, p.Check+" "+p.Object())
	}
	wantProblems := []string{
		model.PolicyCheckUnsupportedKey + " AuthorizationPolicy bookinfo/bad-key",
		model.PolicyCheckUnknownProvider + " AuthorizationPolicy bookinfo/ext",
		model.PolicyCheckPortLevelIgnored + " PeerAuthentication bookinfo/ns",
		model.PolicyCheckShadowed + " PeerAuthentication bookinfo/ns-newer",
	}
	if !slices.Equal(problems, wantProblems) {
		t.Errorf("problems\n got %q\nwant %q", problems, wantProblems)
	}

	// deterministic JSON
	a, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(gens.PolicyReport(push, productpageProxy()))
	if string(a) != string(b) {
		t.Error("two reports of one snapshot differ")
	}
}

func TestPolicyReportWithoutPolicies(t *testing.T) {
	gens := &generators.SidecarGenerators{}
	r := gens.PolicyReport(model.NewPushContext(), productpageProxy())
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"authorizationPolicies":[]`, `"httpFilters":[]`, `"warnings":[]`, `"problems":[]`,
		`"workload":{"mode":"PERMISSIVE","level":"default"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
}

func TestAuthorizationzFindsConnectedProxy(t *testing.T) {
	env, gens := policyEnv(t)
	s := xdstest.NewServer(t)
	gens.Register(s.DS)
	src := gens.Authorizationz(s.DS)
	c := xdstest.Dial(t, s, adsc.Config{NodeID: "sidecar~10.244.0.10~productpage-v1-abc.bookinfo~bookinfo.svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": "bookinfo", "LABELS": map[string]any{"app": "productpage", "version": "v1"}}})
	s.DS.InitPushContext(env)
	if err := c.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, c)
	got, connected := src("productpage-v1-abc.bookinfo")
	r, ok := got.(*generators.PolicyReport)
	if !connected || !ok || r.Proxy != "productpage-v1-abc.bookinfo" || len(r.AuthorizationPolicies) != 6 {
		t.Fatalf("report %v %+v", connected, got)
	}
	if _, connected := src("nobody.bookinfo"); connected {
		t.Error("unknown proxy reported connected")
	}
}

// The model's when-key check and the authz translation agree on which keys
// Istio does not know.
func TestSupportedConditionKeyMatchesAuthz(t *testing.T) {
	keys := []string{"request.headers[x]", "source.ip", "remote.ip", "source.namespace", "source.principal", "source.serviceAccount",
		"source.trustDomain", "request.auth.principal", "request.auth.audiences", "request.auth.presenter", "request.auth.claims[a][b]",
		"destination.ip", "destination.port", "connection.sni", "experimental.envoy.filters.a.b[c]",
		"destination.labels[app]", "destination.namespace", "destination.name", "request.experimental.inline.headers[x]", "source.user", "bogus"}
	for _, k := range keys {
		cfg := config.Config{Meta: config.Meta{GroupVersionKind: gvk.AuthorizationPolicy, Namespace: "ns", Name: "p"},
			Spec: &security.AuthorizationPolicy{Rules: []*security.Rule{{When: []*security.Condition{{Key: k, Values: []string{"1"}}}}}}}
		unknown := false
		for _, w := range authz.BuildHTTP([]config.Config{cfg}, authz.Options{}).Warnings {
			if w.Field == "when[0]" && strings.Contains(w.Reason, "unknown attribute") {
				unknown = true
			}
		}
		if unknown == model.SupportedConditionKey(k) {
			t.Errorf("key %q: authz unknown=%v, model supported=%v", k, unknown, model.SupportedConditionKey(k))
		}
	}
}

// A proxyless gRPC server's report carries the RBAC filters of its server
// listeners, as grpc-go gets them; a sidecar's does not.
func TestPolicyReportProxyless(t *testing.T) {
	env, gens := policyEnv(t)
	push := model.InitContext(env, nil, nil)
	if r := gens.PolicyReport(push, productpageProxy()); r.ProxylessFilters != nil {
		t.Errorf("sidecar has proxyless filters %+v", r.ProxylessFilters)
	}
	p := productpageProxy()
	p.Metadata = &model.NodeMetadata{Generator: generators.GRPCGenerator}
	r := gens.PolicyReport(push, p)
	if len(r.ProxylessFilters) == 0 {
		t.Fatal("proxyless server without RBAC filters")
	}
	var rules []string
	for _, f := range r.ProxylessFilters {
		if !strings.HasPrefix(f.Name, "envoy.filters.http.rbac") {
			t.Errorf("proxyless filter %s", f.Name)
		}
		rules = append(rules, f.Rules...)
	}
	if !slices.Contains(rules, "ns[bookinfo]-policy[allow]-rule[0]") && !slices.Contains(rules, "bookinfo-allow-0") {
		t.Errorf("proxyless rules %q lack the ALLOW policy's rule", rules)
	}
}
