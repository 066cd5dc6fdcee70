package generators_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

func addresses(t *testing.T, r *adsc.Response, name string) []string {
	t.Helper()
	la, ok := r.Resources[name].(*endpointv3.ClusterLoadAssignment)
	if !ok {
		t.Fatalf("%s not in the %s response (has %d)", name, r.TypeURL, len(r.Resources))
	}
	var out []string
	for _, l := range la.Endpoints {
		for _, e := range l.LbEndpoints {
			out = append(out, e.GetEndpoint().GetAddress().GetSocketAddress().GetAddress())
		}
	}
	return out
}

// Load assignments are shared between the sidecars of a namespace and
// network; an endpoint change still reaches each of them, and one network's
// assignment never leaks into another's.
func TestEndpointsSharedAndUpdated(t *testing.T) {
	env, idx := bookinfoEnv(t)
	s := xdstest.NewServer(t)
	(&generators.SidecarGenerators{Endpoints: idx, Discovery: env.ServiceDiscovery()}).Register(s.DS)
	s.DS.InitPushContext(env)
	const v2 = "outbound|9080|v2|reviews.bookinfo.svc.cluster.local"
	const all = "outbound|9080||reviews.bookinfo.svc.cluster.local"
	var clients []*adsc.Client
	for i, md := range []map[string]any{
		{"NAMESPACE": "bookinfo"},
		{"NAMESPACE": "bookinfo"},
		{"NAMESPACE": "bookinfo", "NETWORK": "other"},
	} {
		c := xdstest.Dial(t, s, adsc.Config{Delta: i%2 == 0, NodeID: "sidecar~10.244.1." + string(rune('1'+i)) + "~p" + string(rune('a'+i)) + ".bookinfo~bookinfo.svc.cluster.local", Metadata: md})
		if err := c.Watch(xds.EndpointType, v2, all); err != nil {
			t.Fatal(err)
		}
		r := xdstest.Next(t, c)
		if got := addresses(t, r, v2); len(got) != 1 || got[0] != "10.244.0.22" {
			t.Fatalf("client %d: v2 endpoints %v", i, got)
		}
		if got := addresses(t, r, all); len(got) != 3 {
			t.Fatalf("client %d: all endpoints %v", i, got)
		}
		clients = append(clients, c)
	}

	// v2 moves to a new pod in network net-a: an endpoint-only push
	shard := model.NewShardKey(model.Kubernetes, "Kubernetes")
	sh, _ := idx.ShardsFor("reviews.bookinfo.svc.cluster.local", "bookinfo")
	old := sh.Endpoints(shard)
	var eps []*model.IstioEndpoint
	for _, ep := range old {
		cp := *ep
		if ep.Labels["version"] == "v2" {
			cp.Addresses = []string{"10.244.0.99"}
			cp.Network = "net-a"
		}
		eps = append(eps, &cp)
	}
	if pt := idx.UpdateServiceEndpoints(shard, "reviews.bookinfo.svc.cluster.local", "bookinfo", eps); pt != model.IncrementalPush {
		t.Fatalf("update is %v", pt)
	}
	s.DS.PushFunc(env)(&model.PushRequest{ConfigsUpdated: map[model.ConfigKey]struct{}{
		{Kind: kind.ServiceEntry, Name: "reviews.bookinfo.svc.cluster.local", Namespace: "bookinfo"}: {}}})
	for i, c := range clients {
		r := xdstest.Next(t, c)
		if r.TypeURL != xds.EndpointType {
			t.Fatalf("client %d: endpoint change pushed %s", i, r.TypeURL)
		}
		// without any network gateway, every sidecar, network "other"'s
		// too, gets net-a's endpoint as it is, as in Istio
		// (pilot/pkg/networking/endpoint covers gateways)
		want := "[10.244.0.99]"
		if got := addresses(t, r, v2); fmt.Sprint(got) != want {
			t.Errorf("client %d: v2 endpoints after the move %v, want %s", i, got, want)
		}
	}
}

// A full push that changes nothing sends a delta client nothing: config
// rebuilt for the new PushContext packs to the same bytes (cluster metadata
// and Istio's filters hold maps, which must be packed in a fixed order).
func TestUnchangedConfigIsNotResent(t *testing.T) {
	env, idx := bookinfoEnv(t)
	s := xdstest.NewServer(t)
	(&generators.SidecarGenerators{Endpoints: idx, Discovery: env.ServiceDiscovery()}).Register(s.DS)
	s.DS.InitPushContext(env)
	c := xdstest.Dial(t, s, adsc.Config{Delta: true, NodeID: "sidecar~10.244.0.10~productpage-v1-abc.bookinfo~bookinfo.svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": "bookinfo"}})
	xdstest.WatchInTurn(t, c, xdstest.Watch{Type: xds.ClusterType}, xdstest.Watch{Type: xds.ListenerType},
		xdstest.Watch{Type: xds.RouteType, Names: []string{"9080"}})
	for i := 0; i < 3; i++ {
		s.DS.PushFunc(env)(&model.PushRequest{Full: true, Forced: true})
	}
	xdstest.NoResponse(t, c)

	// the positive control: a change that alters the route of 9080 is sent
	vs := config.Config{Meta: config.Meta{GroupVersionKind: gvk.VirtualService, Name: "details", Namespace: "bookinfo", Domain: "cluster.local"},
		Spec: &networking.VirtualService{Hosts: []string{"details"}, Http: []*networking.HTTPRoute{{
			Timeout: durationpb.New(3 * time.Second),
			Route:   []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "details"}}}}}}}
	if _, err := env.ConfigStore().Create(vs); err != nil {
		t.Fatal(err)
	}
	s.DS.PushFunc(env)(&model.PushRequest{Full: true, Forced: true})
	r := xdstest.Next(t, c)
	if r.TypeURL != xds.RouteType || r.Resources["9080"] == nil {
		t.Fatalf("after a VirtualService change: %s %v, want route configuration 9080", r.TypeURL, r.Resources)
	}
	xdstest.NoResponse(t, c)
}

// Outbound listeners are shared by the sidecars of a namespace, but not
// across what their tracing tags say: each sidecar's HTTP listener names
// its own canonical service.
func TestListenersSharedOnlyWithSameTracingTags(t *testing.T) {
	env, idx := bookinfoEnv(t)
	s := xdstest.NewServer(t)
	(&generators.SidecarGenerators{Endpoints: idx, Discovery: env.ServiceDiscovery()}).Register(s.DS)
	s.DS.InitPushContext(env)
	for i, name := range []string{"productpage", "frontpage", "productpage"} {
		c := xdstest.Dial(t, s, adsc.Config{Delta: true, NodeID: fmt.Sprintf("sidecar~10.244.2.%d~p%d.bookinfo~bookinfo.svc.cluster.local", i, i),
			Metadata: map[string]any{"NAMESPACE": "bookinfo", "LABELS": map[string]any{"service.istio.io/canonical-name": name}}})
		if err := c.Watch(xds.ListenerType); err != nil {
			t.Fatal(err)
		}
		l, ok := xdstest.Next(t, c).Resources["0.0.0.0_9080"].(*listenerv3.Listener)
		if !ok {
			t.Fatal("no 0.0.0.0_9080 listener")
		}
		m := &hcm.HttpConnectionManager{}
		if err := l.FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(m); err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, tag := range m.GetTracing().GetCustomTags() {
			if tag.Tag == "istio.canonical_service" {
				got = tag.GetLiteral().GetValue()
			}
		}
		if got != name {
			t.Errorf("sidecar %d (%s): canonical_service tag %q", i, name, got)
		}
	}
}

// Sidecars of one namespace that different Sidecar resources select see
// different services and may have their own outbound policy, so they never
// share listeners or load assignments, whichever connects first.
func TestCachesFollowSidecarScope(t *testing.T) {
	s := serveFile(t, filepath.Join("testdata", "sidecar-scope.yaml"), nil, nil)
	const bCluster = "outbound|5432||b.app.svc.cluster.local"
	for i, app := range []string{"wide", "narrow", "wide"} {
		c := xdstest.Dial(t, s, adsc.Config{Delta: true, NodeID: fmt.Sprintf("sidecar~10.1.1.%d~%s-%d.app~app.svc.cluster.local", i, app, i),
			Metadata: map[string]any{"NAMESPACE": "app", "LABELS": map[string]any{"app": app}}})
		if err := c.Watch(xds.ListenerType); err != nil {
			t.Fatal(err)
		}
		lds := xdstest.Next(t, c)
		_, hasTCP := lds.Resources["10.9.0.2_5432"]
		// the Sidecar's outbound policy decides where unknown traffic goes
		tp := &tcpproxy.TcpProxy{}
		if err := lds.Resources["virtualOutbound"].(*listenerv3.Listener).FilterChains[1].Filters[0].GetTypedConfig().UnmarshalTo(tp); err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"wide": "PassthroughCluster", "narrow": "BlackHoleCluster"}[app]; tp.GetCluster() != want {
			t.Errorf("sidecar %d (%s): unknown destinations go to %s, want %s", i, app, tp.GetCluster(), want)
		}
		if err := c.Watch(xds.EndpointType, bCluster); err != nil {
			t.Fatal(err)
		}
		got := addresses(t, xdstest.Next(t, c), bCluster)
		if wide := app == "wide"; hasTCP != wide || (len(got) == 1) != wide {
			t.Errorf("sidecar %d (%s): listener for b %v, b endpoints %v", i, app, hasTCP, got)
		}
	}
}
