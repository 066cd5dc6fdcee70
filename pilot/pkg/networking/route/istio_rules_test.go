package route_test

import (
	"reflect"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// The rules below are those tests/differential found ours breaking; each
// is decided by the Istio function its comment in the code names.

func vsOf(name string, http ...*networking.HTTPRoute) *config.Config {
	return &config.Config{Meta: config.Meta{GroupVersionKind: config.GroupVersionKind{Group: "networking.istio.io", Version: "v1", Kind: "VirtualService"},
		Name: name, Namespace: "ns", Domain: "cluster.local"},
		Spec: &networking.VirtualService{Hosts: []string{"a.ns.svc.cluster.local"}, Http: http}}
}

func serviceA() *model.Service {
	return &model.Service{Hostname: "a.ns.svc.cluster.local", Ports: model.PortList{{Name: "http", Port: 80, Protocol: protocol.HTTP}},
		Attributes: model.ServiceAttributes{Name: "a", Namespace: "ns", ServiceRegistry: model.Kubernetes}}
}

var sidecarOpts = route.Options{ProxyNamespace: "ns", DomainSuffix: "cluster.local", Gateway: "mesh"}

func routesOf(t *testing.T, port int, sr route.ServiceRoutes, o route.Options) []*routev3.Route {
	t.Helper()
	rc := route.BuildRouteConfiguration(port, []route.ServiceRoutes{sr}, o)
	if err := rc.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	return rc.VirtualHosts[0].Routes
}

func TestEveryRouteHasADecoratorAndItsMatchName(t *testing.T) {
	vs := vsOf("a",
		&networking.HTTPRoute{Name: "moved", Match: []*networking.HTTPMatchRequest{{Name: "exact", Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Exact{Exact: "/old"}}}},
			Redirect: &networking.HTTPRedirect{Uri: "/new"}},
		&networking.HTTPRoute{Match: []*networking.HTTPMatchRequest{{StatPrefix: "health", Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/healthz"}}}},
			DirectResponse: &networking.HTTPDirectResponse{Status: 200}},
	)
	routes := routesOf(t, 80, route.ServiceRoutes{Service: serviceA(), VirtualService: vs}, sidecarOpts)
	if len(routes) != 2 {
		t.Fatalf("%d routes", len(routes))
	}
	if got := routes[0].GetDecorator().GetOperation(); got != "a:80/old" {
		t.Errorf("redirect operation %q", got)
	}
	if got := routes[1].GetDecorator().GetOperation(); got != "a:80/healthz*" {
		t.Errorf("direct response operation %q", got)
	}
	if routes[0].Name != "moved.exact" || routes[1].StatPrefix != "health" {
		t.Errorf("name %q, stat prefix %q", routes[0].Name, routes[1].StatPrefix)
	}
}

func TestRedirectPort(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    *networking.HTTPRedirect
		port  int
		tls   bool
		want  uint32
		wantP string
	}{
		{"from request port", &networking.HTTPRedirect{RedirectPort: &networking.HTTPRedirect_DerivePort{DerivePort: networking.HTTPRedirect_FROM_REQUEST_PORT}}, 8080, false, 8080, ""},
		{"http default port left out", &networking.HTTPRedirect{RedirectPort: &networking.HTTPRedirect_DerivePort{DerivePort: networking.HTTPRedirect_FROM_REQUEST_PORT}}, 80, false, 0, ""},
		{"https default port left out behind TLS", &networking.HTTPRedirect{RedirectPort: &networking.HTTPRedirect_Port{Port: 443}}, 8443, true, 0, ""},
		{"443 kept for http", &networking.HTTPRedirect{RedirectPort: &networking.HTTPRedirect_Port{Port: 443}}, 80, false, 443, ""},
		{"no port", &networking.HTTPRedirect{Uri: "/x"}, 8080, false, 0, "/x"},
	} {
		o := sidecarOpts
		o.IsTLS = tc.tls
		r := routesOf(t, tc.port, route.ServiceRoutes{Service: serviceA(), VirtualService: vsOf("a", &networking.HTTPRoute{Redirect: tc.in})}, o)[0]
		if got := r.GetRedirect().GetPortRedirect(); got != tc.want {
			t.Errorf("%s: port %d, want %d", tc.name, got, tc.want)
		}
		if _, ok := r.GetRedirect().GetPathRewriteSpecifier().(*routev3.RedirectAction_PathRedirect); !ok || r.GetRedirect().GetPathRedirect() != tc.wantP {
			t.Errorf("%s: path %v, want the path %q replaced", tc.name, r.GetRedirect().GetPathRewriteSpecifier(), tc.wantP)
		}
	}
}

func TestCORSIsEnabledExplicitly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      *networking.CorsPolicy
		forward bool
		origins int
	}{
		{"default forwards unmatched preflights", &networking.CorsPolicy{AllowOrigins: []*networking.StringMatch{{MatchType: &networking.StringMatch_Exact{Exact: "https://x"}}}}, true, 1},
		{"IGNORE", &networking.CorsPolicy{UnmatchedPreflights: networking.CorsPolicy_IGNORE}, false, 0},
		{"deprecated allowOrigin", &networking.CorsPolicy{AllowOrigin: []string{"https://a", "https://b"}}, true, 2}, //nolint:staticcheck
	} {
		vs := vsOf("a", &networking.HTTPRoute{CorsPolicy: tc.in, Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "a.ns.svc.cluster.local"}}}})
		r := routesOf(t, 80, route.ServiceRoutes{Service: serviceA(), VirtualService: vs}, sidecarOpts)[0]
		c := &corsv3.CorsPolicy{}
		if err := r.TypedPerFilterConfig["envoy.filters.http.cors"].UnmarshalTo(c); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if f := c.GetFilterEnabled().GetDefaultValue(); f.GetNumerator() != 100 || f.GetDenominator().String() != "HUNDRED" {
			t.Errorf("%s: filterEnabled %v", tc.name, c.GetFilterEnabled())
		}
		if c.GetForwardNotMatchingPreflights().GetValue() != tc.forward || len(c.AllowOriginStringMatch) != tc.origins {
			t.Errorf("%s: forward %v, %d origins", tc.name, c.GetForwardNotMatchingPreflights(), len(c.AllowOriginStringMatch))
		}
	}
}

func TestVirtualServiceWithoutRoutesForThePortKeepsTheDefaultRoute(t *testing.T) {
	vs := vsOf("a", &networking.HTTPRoute{Match: []*networking.HTTPMatchRequest{{Port: 8080}},
		Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "a.ns.svc.cluster.local"}}}})
	routes := routesOf(t, 80, route.ServiceRoutes{Service: serviceA(), VirtualService: vs}, sidecarOpts)
	if len(routes) != 1 || routes[0].Name != route.DefaultRoute {
		t.Errorf("routes %v, want the default route", routes)
	}
	// a host of its own gets nothing then
	rc := route.BuildRouteConfiguration(80, []route.ServiceRoutes{{Service: &model.Service{Hostname: "x.example.com"}, VirtualService: vs, HostOnly: true}}, sidecarOpts)
	if len(rc.VirtualHosts) != 1 {
		t.Errorf("virtual hosts %v, want the catch-all alone", rc.VirtualHosts)
	}
}

func TestCatchAllMatchEndsTheVirtualService(t *testing.T) {
	to := []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "a.ns.svc.cluster.local"}}}
	vs := vsOf("a",
		&networking.HTTPRoute{Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/"}}}}, Route: to},
		&networking.HTTPRoute{Route: to})
	if routes := routesOf(t, 80, route.ServiceRoutes{Service: serviceA(), VirtualService: vs}, sidecarOpts); len(routes) != 1 {
		t.Errorf("%d routes, want the catch-all alone", len(routes))
	}
}

func TestSourceMatches(t *testing.T) {
	to := []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "a.ns.svc.cluster.local"}}}
	vs := vsOf("a",
		&networking.HTTPRoute{Name: "other-ns", Match: []*networking.HTTPMatchRequest{{SourceNamespace: "other"}}, Route: to},
		&networking.HTTPRoute{Name: "gateways", Match: []*networking.HTTPMatchRequest{{Gateways: []string{"mesh"}, SourceLabels: map[string]string{"app": "x"},
			Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/g"}}}}, Route: to},
		&networking.HTTPRoute{Name: "rest", Route: to})
	var names []string
	for _, r := range routesOf(t, 80, route.ServiceRoutes{Service: serviceA(), VirtualService: vs}, sidecarOpts) {
		names = append(names, r.Name)
	}
	// a match naming gateways selects by them alone (sourceMatchHTTP)
	if want := []string{"gateways", "rest"}; !reflect.DeepEqual(names, want) {
		t.Errorf("routes %v, want %v", names, want)
	}
}

func TestHeadlessKubernetesServiceAnswersToNamesBelowIt(t *testing.T) {
	s := serviceA()
	s.Resolution = model.Passthrough
	got := route.Domains(s, 80, sidecarOpts)
	want := []string{"a.ns.svc.cluster.local", "a.ns.svc.cluster.local.", "a", "a.ns.svc", "a.ns",
		"*.a.ns.svc.cluster.local", "*.a.ns.svc.cluster.local.", "*.a", "*.a.ns.svc", "*.a.ns"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("domains %v\nwant %v", got, want)
	}
}

func TestHostOnlyVirtualHost(t *testing.T) {
	vs := vsOf("a", &networking.HTTPRoute{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "a.ns.svc.cluster.local"}}}})
	rc := route.BuildRouteConfiguration(80, []route.ServiceRoutes{
		{Service: &model.Service{Hostname: "a.ns.svc.cluster.local"}, VirtualService: vs, HostOnly: true},
		{Service: &model.Service{Hostname: "a", Ports: model.PortList{{Port: 80, Protocol: protocol.HTTP}}}},
	}, sidecarOpts)
	var names []string
	for _, vh := range rc.VirtualHosts {
		names = append(names, vh.Name)
	}
	// sorted by virtual host name, as Istio's SortVirtualHosts: "a.ns…:80"
	// before "a:80" though "a" < "a.ns…"
	if want := []string{"a.ns.svc.cluster.local:80", "a:80", route.BlockAll}; !reflect.DeepEqual(names, want) {
		t.Fatalf("virtual hosts %v, want %v", names, want)
	}
	if d := rc.VirtualHosts[0].Domains; !reflect.DeepEqual(d, []string{"a.ns.svc.cluster.local"}) {
		t.Errorf("domains %v", d)
	}
}
