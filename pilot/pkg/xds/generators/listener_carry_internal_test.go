package generators

import (
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// dbHost is the service of dbService.
const dbHost = "db.default.svc.cluster.local"

// dbService is db.default (VIP 10.96.0.12) with an HTTP port, 9080, and a
// TCP port, 5432.
func dbService() *model.Service {
	return &model.Service{Hostname: dbHost, Ports: model.PortList{{Name: "http", Port: 9080, Protocol: protocol.HTTP}, {Name: "tcp", Port: 5432, Protocol: protocol.TCP}},
		DefaultAddress: "10.96.0.12", ClusterVIPs: model.AddressMap{Addresses: map[string][]string{"Kubernetes": {"10.96.0.12"}}},
		Attributes: model.ServiceAttributes{Name: "db", Namespace: "default", ServiceRegistry: model.Kubernetes}}
}

// dbHTTPRoutes is a VirtualService of dbService with HTTP routes only,
// which retry the given number of times.
func dbHTTPRoutes(attempts int32) *networking.VirtualService {
	return &networking.VirtualService{Hosts: []string{dbHost}, Http: []*networking.HTTPRoute{{
		Route:   []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: dbHost}}},
		Retries: &networking.HTTPRetry{Attempts: attempts}}}}
}

// Outbound listeners built under one snapshot serve the next when only
// VirtualServices without tcp or tls routes changed; a VirtualService
// with tcp routes, a scope from a Sidecar or another kind builds them
// again, and what is carried equals a build from scratch.
func TestListenersCarriedAcrossHTTPRouteChanges(t *testing.T) {
	host, svc := dbHost, dbService()
	store := memory.New(collections.Pilot)
	put := func(g config.GroupVersionKind, ns, name string, spec config.Spec) {
		storePut(t, store, g, ns, name, spec)
	}
	httpVS := dbHTTPRoutes
	put(gvk.VirtualService, "default", "web", httpVS(1))
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: services{svc}})
	change := func(old *model.PushContext, k kind.Kind) *model.PushContext {
		return model.InitContext(env, old, &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(model.ConfigKey{Kind: k, Name: "x", Namespace: "default"})})
	}
	w := &xds.WatchedResource{TypeURL: xds.ListenerType}
	// the outbound listener of the TCP port, as a proxy of ns gets it
	// from a generator with a warm cache and from a fresh one
	tcpListener := func(g *SidecarGenerators, push *model.PushContext, ns string) *discovery.Resource {
		t.Helper()
		out, err := g.listeners(namespacedProxy(t, ns, "", 1), w, &model.PushRequest{Full: true, Push: push})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Resources {
			if r.Name == "10.96.0.12_5432" {
				return r
			}
		}
		t.Fatalf("no listener 10.96.0.12_5432 among %d", len(out.Resources))
		return nil
	}
	g := &SidecarGenerators{Discovery: services{svc}}
	check := func(push *model.PushContext, ns string, prev *discovery.Resource, carried bool, what string) *discovery.Resource {
		t.Helper()
		got := tcpListener(g, push, ns)
		if (got == prev) != carried {
			t.Errorf("%s: carried %v, want %v", what, got == prev, carried)
		}
		if fresh := tcpListener(&SidecarGenerators{Discovery: services{svc}}, push, ns); fresh.Version != got.Version {
			t.Errorf("%s: the listener differs from one built from scratch", what)
		}
		return got
	}

	p1 := model.InitContext(env, nil, nil)
	l1 := tcpListener(g, p1, "shop")
	put(gvk.VirtualService, "default", "web", httpVS(3))
	p2 := change(p1, kind.VirtualService)
	l2 := check(p2, "shop", l1, true, "an HTTP-only VirtualService change")

	put(gvk.VirtualService, "default", "tcp", &networking.VirtualService{Hosts: []string{host}, Tcp: []*networking.TCPRoute{{
		Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: host, Port: &networking.PortSelector{Number: 5432}}}}}}})
	p3 := change(p2, kind.VirtualService)
	l3 := check(p3, "shop", l2, false, "a VirtualService with tcp routes")

	put(gvk.DestinationRule, "default", "db", &networking.DestinationRule{Host: host, TrafficPolicy: &networking.TrafficPolicy{
		ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 3}}}})
	p4 := change(p3, kind.DestinationRule)
	l4 := check(p4, "shop", l3, false, "a DestinationRule change")

	put(gvk.Sidecar, "shop", "default", &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"*/*"}}}})
	p5 := change(p4, kind.Sidecar)
	l5 := check(p5, "shop", l4, false, "a new Sidecar")
	put(gvk.VirtualService, "default", "web", httpVS(5))
	p6 := change(p5, kind.VirtualService)
	check(p6, "shop", l5, false, "an HTTP-only change under a Sidecar")
}
