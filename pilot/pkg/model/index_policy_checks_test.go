package model_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	meshconfig "istio.io/api/mesh/v1alpha1"
	security "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
	"github.com/meshplane/istiod/pkg/monitoring"
)

func matchLabels(kv ...string) *typev1beta1.WorkloadSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &typev1beta1.WorkloadSelector{MatchLabels: m}
}

// addWorkload puts one endpoint with labels behind a service of ns.
func (e *pcEnv) addWorkload(ns, svc, ip string, labels map[string]string) {
	e.eps.UpdateServiceEndpoints(model.NewShardKey(model.Kubernetes, "Kubernetes"), svcHost(svc, ns), ns, []*model.IstioEndpoint{{
		Addresses: []string{ip}, Labels: labels, ServicePortName: "http", EndpointPort: 80, Namespace: ns, HealthStatus: model.Healthy}})
}

// problemsOf returns "<check> <object> <field>" for each problem.
func problemsOf(p *model.PushContext) []string {
	var out []string
	for _, pp := range p.PolicyProblems() {
		out = append(out, pp.Check+" "+pp.Object()+" "+pp.Field)
	}
	return out
}

func hasProblem(t *testing.T, p *model.PushContext, want string) model.PolicyProblem {
	t.Helper()
	for _, pp := range p.PolicyProblems() {
		if pp.Check+" "+pp.Object()+" "+pp.Field == want {
			return pp
		}
	}
	t.Errorf("missing %q in %q", want, problemsOf(p))
	return model.PolicyProblem{}
}

func lacksProblem(t *testing.T, p *model.PushContext, object string) {
	t.Helper()
	for _, s := range problemsOf(p) {
		if strings.Contains(s, " "+object+" ") {
			t.Errorf("unexpected problem %q", s)
		}
	}
}

func TestPolicySelectorMatchesNoWorkload(t *testing.T) {
	e := newPCEnv(t)
	e.addWorkload("bookinfo", "reviews", "10.0.0.1", map[string]string{"app": "reviews", "version": "v1"})
	e.create(kind.AuthorizationPolicy, "bookinfo", "reviews", 0, &security.AuthorizationPolicy{Selector: matchLabels("app", "reviews")})
	e.create(kind.AuthorizationPolicy, "bookinfo", "ghost", 1, &security.AuthorizationPolicy{Selector: matchLabels("app", "ghost")})
	e.create(kind.AuthorizationPolicy, "other", "reviews", 2, &security.AuthorizationPolicy{Selector: matchLabels("app", "reviews")})
	e.create(kind.AuthorizationPolicy, "bookinfo", "all", 3, &security.AuthorizationPolicy{})
	e.create(kind.RequestAuthentication, "bookinfo", "ghost-jwt", 4, &security.RequestAuthentication{Selector: matchLabels("app", "ghost")})
	e.create(kind.PeerAuthentication, "bookinfo", "ghost-mtls", 5, &security.PeerAuthentication{Selector: matchLabels("app", "reviews", "version", "v9")})
	// root-namespace selector policies apply in every namespace
	e.create(kind.AuthorizationPolicy, "istio-system", "mesh-reviews", 6, &security.AuthorizationPolicy{Selector: matchLabels("app", "reviews")})
	e.create(kind.AuthorizationPolicy, "istio-system", "mesh-ghost", 7, &security.AuthorizationPolicy{Selector: matchLabels("app", "ghost")})
	p := e.push()

	pp := hasProblem(t, p, model.PolicyCheckNoWorkload+" AuthorizationPolicy bookinfo/ghost spec.selector.matchLabels")
	if !strings.Contains(pp.Message, "{app=ghost}") || !strings.Contains(pp.Message, "in namespace bookinfo") {
		t.Errorf("message %q", pp.Message)
	}
	hasProblem(t, p, model.PolicyCheckNoWorkload+" AuthorizationPolicy other/reviews spec.selector.matchLabels")
	hasProblem(t, p, model.PolicyCheckNoWorkload+" RequestAuthentication bookinfo/ghost-jwt spec.selector.matchLabels")
	hasProblem(t, p, model.PolicyCheckNoWorkload+" PeerAuthentication bookinfo/ghost-mtls spec.selector.matchLabels")
	if pp := hasProblem(t, p, model.PolicyCheckNoWorkload+" AuthorizationPolicy istio-system/mesh-ghost spec.selector.matchLabels"); !strings.Contains(pp.Message, "in any namespace") {
		t.Errorf("message %q", pp.Message)
	}
	lacksProblem(t, p, "bookinfo/reviews")
	lacksProblem(t, p, "bookinfo/all")
	lacksProblem(t, p, "istio-system/mesh-reviews")

	// A workload appearing later clears the problem on the next read, with
	// no new snapshot (endpoint changes are often incremental pushes).
	e.addWorkload("bookinfo", "ghost", "10.0.0.2", map[string]string{"app": "ghost"})
	lacksProblem(t, p, "bookinfo/ghost")
	lacksProblem(t, p, "bookinfo/ghost-jwt")
	hasProblem(t, p, model.PolicyCheckNoWorkload+" AuthorizationPolicy other/reviews spec.selector.matchLabels")
}

func TestPolicyWorkloadCheckNeedsEndpointIndex(t *testing.T) {
	e := newPCEnv(t)
	e.env = model.NewEnvironment(model.EnvironmentOptions{ConfigStore: e.store, ServiceDiscovery: e.disc})
	e.create(kind.AuthorizationPolicy, "bookinfo", "ghost", 0, &security.AuthorizationPolicy{Selector: matchLabels("app", "ghost")})
	if got := problemsOf(e.push()); len(got) != 0 {
		t.Errorf("without an endpoint index workloads are unknown; got %q", got)
	}
}

func TestPeerAuthenticationIgnoredParts(t *testing.T) {
	e := newPCEnv(t)
	e.addWorkload("bookinfo", "reviews", "10.0.0.1", map[string]string{"app": "reviews"})
	strict := &security.PeerAuthentication_MutualTLS{Mode: security.PeerAuthentication_MutualTLS_STRICT}
	ports := map[uint32]*security.PeerAuthentication_MutualTLS{9080: {Mode: security.PeerAuthentication_MutualTLS_DISABLE}}
	e.create(kind.PeerAuthentication, "istio-system", "default", 0, &security.PeerAuthentication{Mtls: strict, PortLevelMtls: ports})
	e.create(kind.PeerAuthentication, "istio-system", "second", 1, &security.PeerAuthentication{Mtls: strict})
	e.create(kind.PeerAuthentication, "istio-system", "selects", 2, &security.PeerAuthentication{Selector: matchLabels("app", "reviews"), Mtls: strict})
	e.create(kind.PeerAuthentication, "bookinfo", "ns", 3, &security.PeerAuthentication{PortLevelMtls: ports})
	e.create(kind.PeerAuthentication, "bookinfo", "ns-newer", 4, &security.PeerAuthentication{Mtls: strict})
	e.create(kind.PeerAuthentication, "bookinfo", "reviews", 5, &security.PeerAuthentication{Selector: matchLabels("app", "reviews"), PortLevelMtls: ports})
	p := e.push()

	if pp := hasProblem(t, p, model.PolicyCheckPortLevelIgnored+" PeerAuthentication istio-system/default spec.portLevelMtls"); !strings.Contains(pp.Message, "mesh-wide") {
		t.Errorf("message %q", pp.Message)
	}
	hasProblem(t, p, model.PolicyCheckPortLevelIgnored+" PeerAuthentication bookinfo/ns spec.portLevelMtls")
	if pp := hasProblem(t, p, model.PolicyCheckShadowed+" PeerAuthentication istio-system/second "); !strings.Contains(pp.Message, "istio-system/default") {
		t.Errorf("message %q", pp.Message)
	}
	hasProblem(t, p, model.PolicyCheckShadowed+" PeerAuthentication bookinfo/ns-newer ")
	hasProblem(t, p, model.PolicyCheckRootSelector+" PeerAuthentication istio-system/selects spec.selector")
	lacksProblem(t, p, "bookinfo/reviews")
	if n := len(p.PolicyProblems()); n != 5 {
		t.Errorf("got %d problems: %q", n, problemsOf(p))
	}
}

func TestCustomProviderNotInMesh(t *testing.T) {
	e := newPCEnv(t)
	e.mesh = proto.Clone(e.mesh).(*meshconfig.MeshConfig)
	e.mesh.ExtensionProviders = []*meshconfig.MeshConfig_ExtensionProvider{
		{Name: "opa", Provider: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzGrpc{
			EnvoyExtAuthzGrpc: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationGrpcProvider{Service: "opa.opa.svc.cluster.local", Port: 9191}}},
		{Name: "zipkin", Provider: &meshconfig.MeshConfig_ExtensionProvider_Zipkin{
			Zipkin: &meshconfig.MeshConfig_ExtensionProvider_ZipkinTracingProvider{Service: "zipkin.istio-system.svc.cluster.local", Port: 9411}}},
	}
	rules := []*security.Rule{{}}
	custom := func(provider string) *security.AuthorizationPolicy {
		return &security.AuthorizationPolicy{Action: security.AuthorizationPolicy_CUSTOM, Rules: rules,
			ActionDetail: &security.AuthorizationPolicy_Provider{Provider: &security.AuthorizationPolicy_ExtensionProvider{Name: provider}}}
	}
	e.create(kind.AuthorizationPolicy, "bookinfo", "good", 0, custom("opa"))
	e.create(kind.AuthorizationPolicy, "bookinfo", "missing", 1, custom("nope"))
	e.create(kind.AuthorizationPolicy, "bookinfo", "tracing", 2, custom("zipkin"))
	e.create(kind.AuthorizationPolicy, "bookinfo", "unnamed", 3, custom(""))
	p := e.push()

	if pp := hasProblem(t, p, model.PolicyCheckUnknownProvider+" AuthorizationPolicy bookinfo/missing spec.provider.name"); !strings.Contains(pp.Message, `"nope"`) ||
		!strings.Contains(pp.Message, "[opa]") {
		t.Errorf("message %q", pp.Message)
	}
	if pp := hasProblem(t, p, model.PolicyCheckUnknownProvider+" AuthorizationPolicy bookinfo/tracing spec.provider.name"); !strings.Contains(pp.Message, "not an envoyExtAuthzHttp or envoyExtAuthzGrpc") {
		t.Errorf("message %q", pp.Message)
	}
	hasProblem(t, p, model.PolicyCheckUnknownProvider+" AuthorizationPolicy bookinfo/unnamed spec.provider.name")
	lacksProblem(t, p, "bookinfo/good")
}

func TestUnsupportedWhenKey(t *testing.T) {
	e := newPCEnv(t)
	when := func(keys ...string) []*security.Condition {
		var out []*security.Condition
		for _, k := range keys {
			out = append(out, &security.Condition{Key: k, Values: []string{"x"}})
		}
		return out
	}
	e.create(kind.AuthorizationPolicy, "bookinfo", "keys", 0, &security.AuthorizationPolicy{Rules: []*security.Rule{
		{When: when("request.headers[x-user]", "source.namespace", "request.auth.claims[groups]", "experimental.envoy.filters.a[b]")},
		{When: when("source.ip", "destination.labels[app]", "request.experimental.inline.headers[x]")},
	}})
	p := e.push()
	pp := hasProblem(t, p, model.PolicyCheckUnsupportedKey+" AuthorizationPolicy bookinfo/keys spec.rules[1].when[1].key")
	if !strings.Contains(pp.Message, `"destination.labels[app]"`) || !strings.Contains(pp.Message, "drops rule 1") {
		t.Errorf("message %q", pp.Message)
	}
	hasProblem(t, p, model.PolicyCheckUnsupportedKey+" AuthorizationPolicy bookinfo/keys spec.rules[1].when[2].key")
	if n := len(p.PolicyProblems()); n != 2 {
		t.Errorf("got %q", problemsOf(p))
	}
	for key, want := range map[string]bool{"source.principal": true, "connection.sni": true, "request.auth.presenter": true,
		"destination.port": true, "source.trustDomain": true, "destination.namespace": false, "": false} {
		if got := model.SupportedConditionKey(key); got != want {
			t.Errorf("SupportedConditionKey(%q) = %v", key, got)
		}
	}
}

func policyGauge(t *testing.T, check string) float64 {
	t.Helper()
	families, err := monitoring.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "istiod_policy_ignored" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "check" && l.GetValue() == check {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("istiod_policy_ignored{check=%s} not registered", check)
	return 0
}

func TestPolicyProblemsOnTheBoard(t *testing.T) {
	if got := model.PolicyProblemSource(func() *model.PushContext { return nil })(); len(got) != 0 {
		t.Errorf("no snapshot: %v", got)
	}
	e := newPCEnv(t)
	e.create(kind.AuthorizationPolicy, "bookinfo", "ghost", 0, &security.AuthorizationPolicy{Selector: matchLabels("app", "ghost")})
	p := e.push()
	board := model.PolicyProblemSource(func() *model.PushContext { return p })
	got := board()
	if len(got) != 1 || got[0].Object != "AuthorizationPolicy bookinfo/ghost" || got[0].Field != "spec.selector.matchLabels" ||
		got[0].Severity != "warning" || got[0].Source != "policy" || got[0].Since.IsZero() {
		t.Fatalf("board = %+v", got)
	}
	if got := policyGauge(t, model.PolicyCheckNoWorkload); got != 1 {
		t.Errorf("istiod_policy_ignored{check=%s} = %v", model.PolicyCheckNoWorkload, got)
	}
	if got := policyGauge(t, model.PolicyCheckShadowed); got != 0 {
		t.Errorf("istiod_policy_ignored{check=%s} = %v", model.PolicyCheckShadowed, got)
	}
	// The first-seen time survives a new snapshot with the same problem.
	e.create(kind.AuthorizationPolicy, "bookinfo", "other", 1, &security.AuthorizationPolicy{})
	p2 := model.InitContext(e.env, p, pcFull(pcKey(kind.AuthorizationPolicy, "bookinfo", "other")))
	ps := p2.PolicyProblems()
	if len(ps) != 1 || !ps[0].Since.Equal(got[0].Since) {
		t.Errorf("after rebuild: %+v (first seen %v)", ps, got[0].Since)
	}
}
