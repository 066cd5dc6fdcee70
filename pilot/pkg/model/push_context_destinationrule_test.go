package model_test

import (
	"slices"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	typeapi "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

func subsets(names ...string) []*networking.Subset {
	var out []*networking.Subset
	for _, n := range names {
		out = append(out, &networking.Subset{Name: n, Labels: map[string]string{"version": n}})
	}
	return out
}

func lb(s networking.LoadBalancerSettings_SimpleLB) *networking.TrafficPolicy {
	return &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: s}}}
}

func fromNames(drs []*model.ConsolidatedDestRule) []string {
	var out []string
	for _, dr := range drs {
		var from []string
		for _, f := range dr.From() {
			from = append(from, f.String())
		}
		out = append(out, strings.Join(from, "+"))
	}
	return out
}

func TestDestinationRuleMerging(t *testing.T) {
	e := newPCEnv(t)
	e.addService(svcHost("reviews", "default"), "default", 0)
	e.create(kind.DestinationRule, "default", "first", 0, &networking.DestinationRule{Host: "reviews", Subsets: subsets("v1", "v2"), TrafficPolicy: lb(networking.LoadBalancerSettings_ROUND_ROBIN)})
	e.create(kind.DestinationRule, "default", "second", 1, &networking.DestinationRule{Host: "reviews.default.svc.cluster.local", Subsets: subsets("v2", "v3"), TrafficPolicy: lb(networking.LoadBalancerSettings_RANDOM)})
	e.create(kind.DestinationRule, "default", "no-policy-first", 2, &networking.DestinationRule{Host: "ratings"})
	e.create(kind.DestinationRule, "default", "policy-later", 3, &networking.DestinationRule{Host: "ratings", TrafficPolicy: lb(networking.LoadBalancerSettings_LEAST_REQUEST)})
	p := e.push()

	drs := p.DestinationRule("default", svcHost("reviews", "default"))
	if got := fromNames(drs); !slices.Equal(got, []string{"default/first+default/second"}) {
		t.Fatalf("merged from = %v", got)
	}
	spec := drs[0].Spec()
	var names []string
	for _, s := range spec.Subsets {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"v1", "v2", "v3"}) {
		t.Errorf("subsets = %v, want v1 v2 v3 (appended, duplicate v2 dropped)", names)
	}
	if spec.TrafficPolicy.GetLoadBalancer().GetSimple() != networking.LoadBalancerSettings_ROUND_ROBIN {
		t.Error("the oldest rule's traffic policy must win")
	}
	if got := p.DestinationRule("default", svcHost("ratings", "default"))[0].Spec().TrafficPolicy.GetLoadBalancer().GetSimple(); got != networking.LoadBalancerSettings_LEAST_REQUEST {
		t.Errorf("a rule without policy takes the later one's: %v", got)
	}
	if dup := p.ProxyStatus()[model.MetricDuplicatedSubsets]; len(dup) != 1 || !strings.Contains(dup[svcHost("reviews", "default")].Message, "v2") {
		t.Errorf("duplicate subsets = %v", dup)
	}
	// The stored rules are untouched.
	stored := e.store.Get(p.DestinationRules()[0].GroupVersionKind, "first", "default").Spec.(*networking.DestinationRule)
	if len(stored.Subsets) != 2 || stored.Host != "reviews" {
		t.Error("store object was mutated")
	}
}

func TestDestinationRulePrecedence(t *testing.T) {
	e := newPCEnv(t)
	host := svcHost("reviews", "svc-ns")
	svc := e.addService(host, "svc-ns", 0)
	e.create(kind.DestinationRule, "istio-system", "root", 0, &networking.DestinationRule{Host: "*.svc.cluster.local"})
	e.create(kind.DestinationRule, "svc-ns", "owner", 1, &networking.DestinationRule{Host: host})
	e.create(kind.DestinationRule, "client", "local", 2, &networking.DestinationRule{Host: host, ExportTo: []string{"."}})
	e.create(kind.DestinationRule, "svc-ns", "owner-private", 3, &networking.DestinationRule{Host: "other", ExportTo: []string{"."}})
	e.create(kind.DestinationRule, "istio-system", "root-private", 4, &networking.DestinationRule{Host: "*.example.com", ExportTo: []string{"."}})
	p := e.push()

	cases := []struct {
		proxyNS, host string
		want          string
	}{
		{"client", host, "client/local"},                               // 1. the proxy's own namespace
		{"third", host, "svc-ns/owner"},                                // 2. exported by the service's namespace
		{"svc-ns", host, "svc-ns/owner"},                               // own namespace is the service's
		{"third", svcHost("ratings", "x"), "istio-system/root"},        // 3. exported by the root namespace (wildcard)
		{"third", svcHost("other", "svc-ns"), "istio-system/root"},     // private rules of other namespaces are not seen
		{"svc-ns", svcHost("other", "svc-ns"), "svc-ns/owner-private"}, // but are in their own namespace
		{"istio-system", "a.example.com", "istio-system/root-private"}, // root-local pool for root proxies
		{"third", "a.example.com", ""},                                 // root-private is not exported
		{"istio-system", host, "svc-ns/owner"},                         // root proxy: root-local pool first, then as usual
	}
	for _, tc := range cases {
		got := strings.Join(fromNames(p.DestinationRule(tc.proxyNS, tc.host)), ",")
		if got != tc.want {
			t.Errorf("DestinationRule(%s, %s) = %q, want %q", tc.proxyNS, tc.host, got, tc.want)
		}
	}
	if got := fromNames(p.DestinationRuleForService("third", svc)); !slices.Equal(got, []string{"svc-ns/owner"}) {
		t.Errorf("DestinationRuleForService = %v", got)
	}
}

func TestDestinationRuleExportTo(t *testing.T) {
	cases := []struct {
		name        string
		exportTo    []string
		meshDefault []string
		seenBy      map[string]bool
	}{
		{name: "unset, default *", seenBy: map[string]bool{"owner": true, "other": true}},
		{name: "unset, default .", meshDefault: []string{"."}, seenBy: map[string]bool{"owner": true, "other": false}},
		{name: "private", exportTo: []string{"."}, seenBy: map[string]bool{"owner": true, "other": false}},
		{name: "to other only", exportTo: []string{"other"}, seenBy: map[string]bool{"owner": false, "other": true, "third": false}},
		{name: "nobody", exportTo: []string{"~"}, seenBy: map[string]bool{"owner": false, "other": false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newPCEnv(t)
			if tc.meshDefault != nil {
				e.mesh.DefaultDestinationRuleExportTo = tc.meshDefault
			}
			e.addService(svcHost("reviews", "owner"), "owner", 0)
			e.create(kind.DestinationRule, "owner", "dr", 0, &networking.DestinationRule{Host: "reviews", ExportTo: tc.exportTo})
			p := e.push()
			for ns, want := range tc.seenBy {
				if got := len(p.DestinationRule(ns, svcHost("reviews", "owner"))) == 1; got != want {
					t.Errorf("seen by %s = %v, want %v", ns, got, want)
				}
			}
		})
	}
}

func TestDestinationRuleWorkloadSelector(t *testing.T) {
	e := newPCEnv(t)
	host := svcHost("reviews", "default")
	e.addService(host, "default", 0)
	e.create(kind.DestinationRule, "default", "all", 0, &networking.DestinationRule{Host: host, TrafficPolicy: lb(networking.LoadBalancerSettings_RANDOM)})
	e.create(kind.DestinationRule, "default", "canary", 1, &networking.DestinationRule{Host: host, TrafficPolicy: lb(networking.LoadBalancerSettings_LEAST_REQUEST),
		WorkloadSelector: &typeapi.WorkloadSelector{MatchLabels: map[string]string{"app": "canary"}}})
	p := e.push()
	canary := sidecarProxy("default", map[string]string{"app": "canary"})
	other := sidecarProxy("default", map[string]string{"app": "web"})
	if got := p.SidecarScope(canary).DestinationRule(canary, host).Rule().Name; got != "canary" {
		t.Errorf("canary proxy uses %s", got)
	}
	if got := p.SidecarScope(other).DestinationRule(other, host).Rule().Name; got != "all" {
		t.Errorf("other proxy uses %s", got)
	}
	// The selector rule is private: another namespace sees only the catch-all.
	if got := fromNames(p.DestinationRule("elsewhere", host)); !slices.Equal(got, []string{"default/all"}) {
		t.Errorf("elsewhere = %v", got)
	}
}

func TestDestinationRuleSubsetWithoutEndpoints(t *testing.T) {
	e := newPCEnv(t)
	host := svcHost("reviews", "default")
	e.addService(host, "default", 0)
	e.eps.UpdateServiceEndpoints(model.NewShardKey(model.Kubernetes, "c1"), host, "default", []*model.IstioEndpoint{
		{Addresses: []string{"10.0.0.1"}, ServicePortName: "http", EndpointPort: 9080, Labels: map[string]string{"version": "v1"}},
	})
	e.create(kind.DestinationRule, "default", "dr", 0, &networking.DestinationRule{Host: "reviews", Subsets: subsets("v1", "v9")})
	p := e.push()
	got := p.ProxyStatus()[model.MetricClusterNoInstances]
	if len(got) != 1 {
		t.Fatalf("no-instance clusters = %v", got)
	}
	if _, ok := got["outbound|80|v9|"+host]; !ok {
		t.Errorf("want the v9 subset cluster, got %v", got)
	}
}
