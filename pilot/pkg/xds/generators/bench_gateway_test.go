package generators_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// benchGatewayEnv is benchEnv plus an ingress Gateway (HTTP 80 and HTTPS
// 443 for every host) and one VirtualService per service bound to it:
// 1,000 hosts svc-<i>.example.com.
func benchGatewayEnv(tb testing.TB, n int) (*model.Environment, *model.EndpointIndex) {
	env, idx := benchEnv(tb, n)
	store := env.ConfigStore()
	gw := &networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}, Servers: []*networking.Server{
		{Port: &networking.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"*.example.com"}},
		{Port: &networking.Port{Number: 443, Name: "https", Protocol: "HTTPS"}, Hosts: []string{"*.example.com"},
			Tls: &networking.ServerTLSSettings{Mode: networking.ServerTLSSettings_SIMPLE, CredentialName: "wildcard-cert"}},
	}}
	cfgs := []config.Config{{Meta: config.Meta{GroupVersionKind: gvk.Gateway, Name: "ingress", Namespace: "istio-system", Domain: "cluster.local"}, Spec: gw}}
	for i := 0; i < n; i++ {
		name, ns := fmt.Sprintf("svc-%d", i), fmt.Sprintf("ns-%d", i%10)
		vs := &networking.VirtualService{Hosts: []string{name + ".example.com"}, Gateways: []string{"istio-system/ingress"},
			Http: []*networking.HTTPRoute{
				{Match: []*networking.HTTPMatchRequest{{Uri: &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: "/v2"}}}},
					Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: name + "." + ns + ".svc.cluster.local", Subset: "v2"}}}},
				{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: name + "." + ns + ".svc.cluster.local", Subset: "v1"}}}},
			}}
		cfgs = append(cfgs, config.Config{Meta: config.Meta{GroupVersionKind: gvk.VirtualService, Name: name + "-ingress", Namespace: ns, Domain: "cluster.local"}, Spec: vs})
	}
	for _, c := range cfgs {
		if _, err := store.Create(c); err != nil {
			tb.Fatal(err)
		}
	}
	return env, idx
}

// BenchmarkGatewayConfig1000Hosts measures the config of an ingress
// gateway serving 1,000 hosts (HTTP and HTTPS, two routes each) in a mesh
// of 1,000 services: CDS, LDS and both route configurations over one delta
// stream.
func BenchmarkGatewayConfig1000Hosts(b *testing.B) {
	env, idx := benchGatewayEnv(b, 1000)
	addr, ds := benchServer(b, env, idx)
	node := "router~10.9.0.1~ingress-abc.istio-system~istio-system.svc.cluster.local"
	meta := map[string]any{"NAMESPACE": "istio-system", "LABELS": map[string]any{"istio": "ingressgateway"}}
	routes := []string{"http.80", "https.443.https.ingress.istio-system"}

	// once with the checking client: every resource passes ValidateAll and
	// each route configuration has a virtual host per host
	c, err := adsc.Dial(context.Background(), addr, adsc.Config{NodeID: node, Metadata: meta, Delta: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range []struct {
		t     string
		names []string
	}{{xds.ClusterType, nil}, {xds.ListenerType, nil}, {xds.RouteType, routes}} {
		if err := c.Watch(w.t, w.names...); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Next(time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	for _, r := range routes {
		rc, _ := c.Resource(xds.RouteType, r).(*routev3.RouteConfiguration)
		if got := len(rc.GetVirtualHosts()); got != 1000 {
			b.Fatalf("%s has %d virtual hosts, want 1000", r, got)
		}
	}
	c.Close()

	conn, md := benchDial(b, addr, meta)
	steps := []*discovery.DeltaDiscoveryRequest{
		{Node: &core.Node{Id: node, Metadata: md}, TypeUrl: xds.ClusterType},
		{TypeUrl: xds.ListenerType},
		{TypeUrl: xds.RouteType, ResourceNamesSubscribe: routes},
	}
	// warm: a further gateway within one snapshot (clusters cached, routes
	// built per gateway); cold: the first after a full push, snapshot included
	for _, cold := range []bool{false, true} {
		b.Run(map[bool]string{false: "warm", true: "cold"}[cold], func(b *testing.B) {
			var last sidecarConfig
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if cold {
					ds.InitPushContext(env)
				}
				if last, err = deltaSteps(context.Background(), conn, steps); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			for _, t := range []string{xds.ClusterType, xds.ListenerType, xds.RouteType} {
				b.ReportMetric(float64(last.bytes[t]), xds.ShortType(t)+"-bytes")
			}
		})
	}
}
