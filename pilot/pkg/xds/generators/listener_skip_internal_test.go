package generators

import (
	"sync/atomic"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// A connected sidecar without a Sidecar is not given new listeners for a
// change of HTTP routes (its routes come over RDS), but is for a change of
// tcp routes, and then gets the routed chain.
func TestSidecarListenersSkippedOnHTTPRouteChanges(t *testing.T) {
	host, svc := dbHost, dbService()
	store := memory.New(collections.Pilot)
	httpVS := dbHTTPRoutes
	storePut(t, store, gvk.VirtualService, "default", "web", httpVS(1))
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: services{svc}})
	s := xdstest.NewServer(t)
	g := &SidecarGenerators{Discovery: services{svc}}
	g.Register(s.DS)
	var built atomic.Int32
	s.DS.RegisterGenerator(xds.ListenerType, xds.GeneratorFunc(func(p *model.Proxy, w *xds.WatchedResource, req *model.PushRequest) (xds.Generated, error) {
		built.Add(1)
		return g.listeners(p, w, req)
	}))
	s.DS.InitPushContext(env)
	c := xdstest.Dial(t, s, adsc.Config{Delta: true, NodeID: "sidecar~10.0.1.1~app-1.shop~shop.svc.cluster.local", Metadata: map[string]any{"NAMESPACE": "shop"}})
	xdstest.WatchInTurn(t, c, xdstest.Watch{Type: xds.ClusterType}, xdstest.Watch{Type: xds.ListenerType},
		xdstest.Watch{Type: xds.RouteType, Names: []string{"9080"}})
	push := func(name string) {
		s.DS.PushFunc(env)(&model.PushRequest{Full: true, Reason: model.NewReasonStats(model.ConfigUpdate),
			ConfigsUpdated: model.NewConfigKeys(model.ConfigKey{Kind: kind.VirtualService, Name: name, Namespace: "default"})})
	}
	httpChange := func(attempts int32) {
		t.Helper()
		before := built.Load()
		storePut(t, store, gvk.VirtualService, "default", "web", httpVS(attempts))
		push("web")
		if r := xdstest.Next(t, c); r.TypeURL != xds.RouteType {
			t.Fatalf("an HTTP route change pushed %s first", r.TypeURL)
		}
		if n := built.Load() - before; n != 0 {
			t.Errorf("an HTTP route change built the listeners %d times", n)
		}
	}
	httpChange(2)

	// (named after web: web keeps the host's HTTP routes)
	storePut(t, store, gvk.VirtualService, "default", "x-tcp", &networking.VirtualService{Hosts: []string{host}, Tcp: []*networking.TCPRoute{{
		Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: host, Subset: "v1", Port: &networking.PortSelector{Number: 5432}}}}}}})
	push("x-tcp")
	r := xdstest.Next(t, c)
	if r.TypeURL != xds.ListenerType {
		t.Fatalf("a tcp route change pushed %s, want the listeners", r.TypeURL)
	}
	l, ok := r.Resources["10.96.0.12_5432"].(*listenerv3.Listener)
	if !ok {
		t.Fatalf("the pushed listeners lack 10.96.0.12_5432: %v", r.Resources)
	}
	tp := &tcpproxy.TcpProxy{}
	if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(tp); err != nil {
		t.Fatal(err)
	}
	if got, want := tp.GetCluster(), "outbound|5432|v1|"+host; got != want {
		t.Errorf("tcp chain goes to %s, want %s", got, want)
	}
	xdstest.NoResponse(t, c)

	// the listeners now follow the new snapshot: HTTP changes skip them again
	httpChange(3)
}
