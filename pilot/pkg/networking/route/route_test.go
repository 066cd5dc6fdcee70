package route_test

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/tests/refdata"
)

func svc(name, vip string, port int, p protocol.Instance) *model.Service {
	return &model.Service{Hostname: name + ".bookinfo.svc.cluster.local",
		Ports:       model.PortList{{Name: strings.ToLower(string(p)), Port: port, Protocol: p}},
		ClusterVIPs: model.AddressMap{Addresses: map[string][]string{"Kubernetes": {vip}}},
		Attributes:  model.ServiceAttributes{Name: name, Namespace: "bookinfo"}}
}

// resolved returns the reference VirtualService with hosts made FQDN, as
// the push context hands them over.
func resolved(t *testing.T, name string) *config.Config {
	t.Helper()
	b, err := os.ReadFile(refdata.Dir(t, "bookinfo/input/bookinfo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range crd.Parse(b, crd.Options{Domain: "cluster.local"}) {
		if d.Config == nil || d.Config.GroupVersionKind.Kind != "VirtualService" || d.Config.Name != name {
			continue
		}
		c := d.Config.DeepCopy()
		vs := c.Spec.(*networking.VirtualService)
		fq := func(h string) string { return h + ".bookinfo.svc.cluster.local" }
		for i, h := range vs.Hosts {
			vs.Hosts[i] = fq(h)
		}
		for _, hr := range vs.Http {
			for _, r := range hr.Route {
				r.Destination.Host = fq(r.Destination.Host)
			}
		}
		return &c
	}
	t.Fatalf("no VirtualService %s", name)
	return nil
}

func referenceRoute(t *testing.T, name string) any {
	t.Helper()
	b, err := os.ReadFile(refdata.Dir(t, "bookinfo/real/sidecar-productpage/routes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list []map[string]any
	_ = json.Unmarshal(b, &list)
	for _, r := range list {
		if r["name"] == name {
			return r
		}
	}
	t.Fatalf("no route %s", name)
	return nil
}

func TestRoutesMatchIstio(t *testing.T) {
	o := route.Options{ProxyNamespace: "bookinfo", DomainSuffix: "cluster.local", AllowAny: true, Gateway: "mesh"}
	cases := map[int][]route.ServiceRoutes{
		9080: {
			{Service: svc("reviews", "10.96.10.12", 9080, protocol.HTTP), VirtualService: resolved(t, "reviews")},
			{Service: svc("details", "10.96.10.11", 9080, protocol.HTTP)},
			{Service: svc("productpage", "10.96.10.10", 9080, protocol.HTTP)},
		},
		9090: {{Service: svc("ratings", "10.96.10.13", 9090, protocol.GRPC), VirtualService: resolved(t, "ratings")}},
	}
	for port, srs := range cases {
		rc := route.BuildRouteConfiguration(port, srs, o)
		if err := rc.ValidateAll(); err != nil {
			t.Fatalf("%d: invalid: %v", port, err)
		}
		b, _ := protojson.Marshal(rc)
		var got any
		_ = json.Unmarshal(b, &got)
		want := referenceRoute(t, rc.Name)
		if !reflect.DeepEqual(got, want) {
			w, _ := json.Marshal(want)
			t.Errorf("route %d differs\n got %s\nwant %s", port, b, w)
		}
	}
}

// The order Istio 1.31 gives a service of another namespace: name.namespace
// before name.namespace.svc (the reverse of the same-namespace order; see
// ../shared/reference/extensions, route 8080 of reviews).
func TestDomainsFromAnotherNamespace(t *testing.T) {
	d := route.Domains(svc("reviews", "10.0.0.1", 9080, protocol.HTTP), 9080, route.Options{ProxyNamespace: "other", DomainSuffix: "cluster.local"})
	want := []string{"reviews.bookinfo.svc.cluster.local", "reviews.bookinfo.svc.cluster.local.", "reviews.bookinfo", "reviews.bookinfo.svc", "10.0.0.1"}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("domains %v", d)
	}
}

func TestCORSAndRewriteAndRedirect(t *testing.T) {
	vs := &config.Config{Meta: config.Meta{GroupVersionKind: config.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "VirtualService"}, Name: "a", Namespace: "ns", Domain: "cluster.local"},
		Spec: &networking.VirtualService{Hosts: []string{"a.ns.svc.cluster.local"}, Http: []*networking.HTTPRoute{
			{Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/old"}}}},
				Redirect: &networking.HTTPRedirect{Uri: "/new", RedirectCode: 302}},
			{CorsPolicy: &networking.CorsPolicy{AllowOrigins: []*networking.StringMatch{{MatchType: &networking.StringMatch_Exact{Exact: "https://x.example"}}}, AllowMethods: []string{"GET", "POST"}},
				Rewrite: &networking.HTTPRewrite{Uri: "/v2"},
				Route:   []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "a.ns.svc.cluster.local"}}}},
		}}}
	s := &model.Service{Hostname: "a.ns.svc.cluster.local", Ports: model.PortList{{Name: "http", Port: 80, Protocol: protocol.HTTP}},
		Attributes: model.ServiceAttributes{Name: "a", Namespace: "ns"}}
	rc := route.BuildRouteConfiguration(80, []route.ServiceRoutes{{Service: s, VirtualService: vs}}, route.Options{ProxyNamespace: "ns", DomainSuffix: "cluster.local", Gateway: "mesh"})
	if err := rc.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	routes := rc.VirtualHosts[0].Routes
	if len(routes) != 2 || routes[0].GetRedirect().GetPathRedirect() != "/new" || routes[1].GetRoute().GetPrefixRewrite() != "/v2" {
		t.Fatalf("routes %v", routes)
	}
	if routes[1].TypedPerFilterConfig["envoy.filters.http.cors"] == nil {
		t.Error("CORS policy missing")
	}
	if rc.VirtualHosts[1].Name != route.BlockAll {
		t.Errorf("REGISTRY_ONLY catch-all %s", rc.VirtualHosts[1].Name)
	}
}
