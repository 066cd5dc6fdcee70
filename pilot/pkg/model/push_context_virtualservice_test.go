package model_test

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

func route(hosts ...string) []*networking.HTTPRoute {
	var out []*networking.HTTPRoute
	for _, h := range hosts {
		out = append(out, &networking.HTTPRoute{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: h}}}})
	}
	return out
}

func TestVirtualServiceShortNamesResolved(t *testing.T) {
	e := newPCEnv(t)
	stored := e.create(kind.VirtualService, "bookinfo", "reviews", 0, &networking.VirtualService{
		Hosts:    []string{"reviews", "www.example.com", "10.0.0.1"},
		Gateways: []string{"gw", "./gw2", "other/gw3", "gw4.infra.svc.cluster.local", "mesh"},
		Http: []*networking.HTTPRoute{{
			Match:  []*networking.HTTPMatchRequest{{Gateways: []string{"gw"}}},
			Route:  []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "ratings"}}},
			Mirror: &networking.Destination{Host: "mirror"},
		}},
		Tcp: []*networking.TCPRoute{{Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: "db.data"}}}}},
	})
	before := proto.Clone(stored.Spec.(*networking.VirtualService))
	p := e.push()
	got := p.VirtualService("bookinfo", "reviews").Spec.(*networking.VirtualService)
	wantHosts := []string{"reviews.bookinfo.svc.cluster.local", "www.example.com", "10.0.0.1"}
	if !slices.Equal(got.Hosts, wantHosts) {
		t.Errorf("hosts = %v, want %v", got.Hosts, wantHosts)
	}
	wantGW := []string{"bookinfo/gw", "bookinfo/gw2", "other/gw3", "infra/gw4", "mesh"}
	if !slices.Equal(got.Gateways, wantGW) {
		t.Errorf("gateways = %v, want %v", got.Gateways, wantGW)
	}
	r := got.Http[0]
	if r.Route[0].Destination.Host != "ratings.bookinfo.svc.cluster.local" || r.Mirror.Host != "mirror.bookinfo.svc.cluster.local" {
		t.Errorf("http destinations not resolved: %v %v", r.Route[0].Destination.Host, r.Mirror.Host)
	}
	if r.Match[0].Gateways[0] != "bookinfo/gw" {
		t.Errorf("match gateway = %v", r.Match[0].Gateways)
	}
	if h := got.Tcp[0].Route[0].Destination.Host; h != "db.data" {
		t.Errorf("dotted host must be kept, got %s", h)
	}
	// The store's object is untouched.
	if !proto.Equal(e.store.Get(stored.GroupVersionKind, "reviews", "bookinfo").Spec.(*networking.VirtualService), before) {
		t.Error("store object was mutated")
	}
	if len(p.VirtualServicesForGateway("bookinfo", "bookinfo/gw")) != 1 || len(p.VirtualServicesForGateway("x", model.MeshGateway)) != 1 {
		t.Error("VirtualService not bound to its gateways")
	}
}

func TestVirtualServiceExportTo(t *testing.T) {
	cases := []struct {
		name        string
		exportTo    []string
		meshDefault []string
		visibleIn   []string
		hiddenIn    []string
	}{
		{name: "unset, mesh default *", visibleIn: []string{"a", "b"}},
		{name: "unset, mesh default .", meshDefault: []string{"."}, visibleIn: []string{"a"}, hiddenIn: []string{"b"}},
		{name: "public", exportTo: []string{"*"}, meshDefault: []string{"."}, visibleIn: []string{"a", "b"}},
		{name: "private", exportTo: []string{"."}, visibleIn: []string{"a"}, hiddenIn: []string{"b"}},
		{name: "namespaces", exportTo: []string{".", "c"}, visibleIn: []string{"a", "c"}, hiddenIn: []string{"b"}},
		{name: "own namespace by name", exportTo: []string{"a"}, visibleIn: []string{"a"}, hiddenIn: []string{"b"}},
		{name: "nobody", exportTo: []string{"~"}, hiddenIn: []string{"a", "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newPCEnv(t)
			if tc.meshDefault != nil {
				e.mesh.DefaultVirtualServiceExportTo = tc.meshDefault
			}
			e.create(kind.VirtualService, "a", "vs", 0, &networking.VirtualService{Hosts: []string{"x"}, ExportTo: tc.exportTo, Http: route("x")})
			p := e.push()
			for _, ns := range tc.visibleIn {
				if got := p.VirtualServicesForGateway(ns, model.MeshGateway); len(got) != 1 {
					t.Errorf("namespace %s sees %d VirtualServices, want 1", ns, len(got))
				}
			}
			for _, ns := range tc.hiddenIn {
				if got := p.VirtualServicesForGateway(ns, model.MeshGateway); len(got) != 0 {
					t.Errorf("namespace %s sees %v, want none", ns, configNames(got))
				}
			}
		})
	}
}

func TestVirtualServiceGatewayVersusMesh(t *testing.T) {
	e := newPCEnv(t)
	e.create(kind.VirtualService, "a", "mesh-only", 0, &networking.VirtualService{Hosts: []string{"x"}, Http: route("x")})
	e.create(kind.VirtualService, "a", "gw-only", 1, &networking.VirtualService{Hosts: []string{"y"}, Gateways: []string{"istio-system/ingress"}, Http: route("y")})
	e.create(kind.VirtualService, "a", "both", 2, &networking.VirtualService{Hosts: []string{"z"}, Gateways: []string{"istio-system/ingress", "mesh"}, Http: route("z")})
	p := e.push()
	if got := configNames(p.VirtualServicesForGateway("a", model.MeshGateway)); !slices.Equal(got, []string{"a/mesh-only", "a/both"}) {
		t.Errorf("mesh = %v", got)
	}
	if got := configNames(p.VirtualServicesForGateway("istio-system", "istio-system/ingress")); !slices.Equal(got, []string{"a/gw-only", "a/both"}) {
		t.Errorf("gateway = %v", got)
	}
}

func delegateRoute(name, ns string, match ...*networking.HTTPMatchRequest) *networking.HTTPRoute {
	return &networking.HTTPRoute{Name: "root", Match: match, Delegate: &networking.Delegate{Name: name, Namespace: ns},
		Timeout: nil, Headers: &networking.Headers{Request: &networking.Headers_HeaderOperations{Set: map[string]string{"x-root": "1"}}}}
}

func prefix(p string) *networking.HTTPMatchRequest {
	return &networking.HTTPMatchRequest{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: p}}}
}

func TestVirtualServiceDelegates(t *testing.T) {
	e := newPCEnv(t)
	e.create(kind.VirtualService, "root-ns", "root", 0, &networking.VirtualService{
		Hosts: []string{"www.example.com"},
		Http: []*networking.HTTPRoute{
			delegateRoute("reviews", "team", prefix("/reviews")),
			delegateRoute("missing", "team", prefix("/missing")),
			delegateRoute("private", "team", prefix("/private")),
			{Name: "plain", Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "default"}}}},
		},
	})
	e.create(kind.VirtualService, "team", "reviews", 1, &networking.VirtualService{
		Http: []*networking.HTTPRoute{
			{Name: "v2", Match: []*networking.HTTPMatchRequest{prefix("/reviews/v2")}, Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "reviews"}}}},
			{Name: "conflict", Match: []*networking.HTTPMatchRequest{prefix("/other")}, Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "reviews"}}}},
			{Name: "all", Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "reviews"}}}},
		},
	})
	e.create(kind.VirtualService, "team", "private", 2, &networking.VirtualService{ExportTo: []string{"."}, Http: route("private")})
	p := e.push()

	if p.VirtualService("team", "reviews") != nil {
		t.Error("delegates must not be indexed as VirtualServices")
	}
	if got := configNames(p.VirtualServicesForGateway("x", model.MeshGateway)); !slices.Equal(got, []string{"root-ns/root"}) {
		t.Fatalf("mesh VirtualServices = %v", got)
	}
	root := p.VirtualService("root-ns", "root").Spec.(*networking.VirtualService)
	var names []string
	for _, r := range root.Http {
		names = append(names, r.Name)
	}
	// v2 narrows /reviews; "conflict" does not and is dropped; "all" takes
	// the root match; missing and invisible delegates drop their route.
	if want := []string{"root-v2", "root-all", "plain"}; !slices.Equal(names, want) {
		t.Fatalf("merged routes = %v, want %v", names, want)
	}
	v2 := root.Http[0]
	if v2.Match[0].GetUri().GetPrefix() != "/reviews/v2" || v2.Route[0].Destination.Host != "reviews.team.svc.cluster.local" {
		t.Errorf("v2 route = %v", v2)
	}
	if v2.Headers.GetRequest().GetSet()["x-root"] != "1" {
		t.Error("delegate route must inherit the root route's headers")
	}
	if all := root.Http[1]; all.Match[0].GetUri().GetPrefix() != "/reviews" {
		t.Errorf("route without match takes the root match, got %v", all.Match)
	}
	deps := p.DelegateVirtualServices(p.VirtualServicesForGateway("x", model.MeshGateway))
	want := []model.ConfigKey{pcKey(kind.VirtualService, "team", "reviews"), pcKey(kind.VirtualService, "team", "missing"), pcKey(kind.VirtualService, "team", "private")}
	if !slices.Equal(deps, want) {
		t.Errorf("delegates = %v, want %v", deps, want)
	}
	// The stored delegate is untouched by the merge.
	stored := e.store.Get(p.VirtualServices()[0].GroupVersionKind, "reviews", "team").Spec.(*networking.VirtualService)
	if stored.Http[0].Name != "v2" || stored.Http[0].Route[0].Destination.Host != "reviews" {
		t.Error("store delegate was mutated")
	}
}

func TestVirtualServiceProblems(t *testing.T) {
	e := newPCEnv(t)
	e.addService(svcHost("reviews", "default"), "default", 0)
	e.create(kind.VirtualService, "default", "first", 0, &networking.VirtualService{Hosts: []string{"reviews"}, Http: route("reviews")})
	e.create(kind.VirtualService, "default", "second", 1, &networking.VirtualService{Hosts: []string{"reviews"}, Http: route("nowhere")})
	// Private to different namespaces: they clash with the public one only.
	e.create(kind.VirtualService, "other", "private", 2, &networking.VirtualService{Hosts: []string{"reviews.default.svc.cluster.local"}, ExportTo: []string{"."}, Http: route("reviews.default.svc.cluster.local")})
	e.create(kind.VirtualService, "other2", "private", 3, &networking.VirtualService{Hosts: []string{"reviews.default.svc.cluster.local"}, ExportTo: []string{"."}, Http: route("reviews.default.svc.cluster.local")})
	p := e.push()
	st := p.ProxyStatus()
	dup := st[model.MetricDuplicatedDomains]
	if len(dup) != 3 {
		t.Fatalf("dup domains = %v, want 3 (second, other/private, other2/private each clash with default/first)", dup)
	}
	for k, v := range dup {
		if !strings.Contains(v.Message, "default/first") {
			t.Errorf("%s: message %q should name the winner", k, v.Message)
		}
	}
	missing := st[model.MetricMissingRouteHost]
	if len(missing) != 1 {
		t.Fatalf("missing hosts = %v", missing)
	}
	if _, ok := missing["default/second/nowhere.default.svc.cluster.local"]; !ok {
		t.Errorf("missing host key: %v", missing)
	}
	js, err := p.StatusJSON()
	if err != nil || !strings.Contains(string(js), model.MetricDuplicatedDomains) {
		t.Errorf("StatusJSON = %s, %v", js, err)
	}
}
