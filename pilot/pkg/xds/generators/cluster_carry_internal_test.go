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

// Outbound clusters built under one snapshot serve the next when only
// routes (or other kinds that cannot change a cluster) changed in between;
// a destination rule change, an endpoint change or a forced push builds
// them again.
func TestClustersCarriedAcrossRouteChanges(t *testing.T) {
	host := "reviews.default.svc.cluster.local"
	svc := &model.Service{Hostname: host, Ports: model.PortList{{Name: "http", Port: 9080, Protocol: protocol.HTTP}}, DefaultAddress: "10.96.0.12",
		ClusterVIPs: model.AddressMap{Addresses: map[string][]string{"Kubernetes": {"10.96.0.12"}}},
		Attributes:  model.ServiceAttributes{Name: "reviews", Namespace: "default", ServiceRegistry: model.Kubernetes}}
	store := memory.New(collections.Pilot)
	put := func(g config.GroupVersionKind, name string, spec config.Spec) {
		storePut(t, store, g, "default", name, spec)
	}
	put(gvk.DestinationRule, "reviews", &networking.DestinationRule{Host: host, Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}}})
	idx := model.NewEndpointIndex()
	shard := model.NewShardKey(model.Kubernetes, "Kubernetes")
	setEndpoints := func(addr string) {
		idx.UpdateServiceEndpoints(shard, host, "default", []*model.IstioEndpoint{{Addresses: []string{addr}, EndpointPort: 9080,
			ServicePortName: "http", HealthStatus: model.Healthy, Labels: map[string]string{"app": "reviews", "version": "v1"},
			Locality: model.Locality{ClusterID: "Kubernetes"}}})
	}
	setEndpoints("10.244.0.21")
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: services{svc}})
	g := &SidecarGenerators{Discovery: services{svc}, Endpoints: idx}
	proxy := namespacedProxy(t, "shop", "", 1)
	w := &xds.WatchedResource{TypeURL: xds.ClusterType}
	subset := "outbound|9080|v1|" + host
	clusterOf := func(push *model.PushContext) *discovery.Resource {
		t.Helper()
		out, err := g.clusters(proxy, w, &model.PushRequest{Full: true, Push: push})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Resources {
			if r.Name == subset {
				return r
			}
		}
		t.Fatalf("no cluster %s among %d", subset, len(out.Resources))
		return nil
	}
	change := func(old *model.PushContext, k kind.Kind) *model.PushContext {
		return model.InitContext(env, old, &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(model.ConfigKey{Kind: k, Name: "x", Namespace: "default"})})
	}

	p1 := model.InitContext(env, nil, nil)
	c1 := clusterOf(p1)
	put(gvk.VirtualService, "reviews", &networking.VirtualService{Hosts: []string{host}, Http: []*networking.HTTPRoute{{
		Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: host, Subset: "v1"}}}}}})
	p2 := change(p1, kind.VirtualService)
	if c2 := clusterOf(p2); c2 != c1 {
		t.Error("a VirtualService change rebuilt the clusters")
	}
	p3 := change(p2, kind.AuthorizationPolicy)
	c3 := clusterOf(p3)
	if c3 != c1 {
		t.Error("an AuthorizationPolicy change after it rebuilt the clusters")
	}

	put(gvk.DestinationRule, "reviews", &networking.DestinationRule{Host: host, Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"},
		TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 7}}}}}})
	p4 := change(p3, kind.DestinationRule)
	c4 := clusterOf(p4)
	if c4 == c3 || c4.Version == c3.Version {
		t.Error("a DestinationRule change kept the old clusters")
	}

	// an endpoint change within the snapshot, then a route change: the
	// entry's endpoint version no longer matches
	setEndpoints("10.244.0.99")
	p5 := change(p4, kind.VirtualService)
	if c5 := clusterOf(p5); c5 == c4 {
		t.Error("clusters built before an endpoint change were carried over")
	}

	p6 := model.InitContext(env, p5, &model.PushRequest{Full: true, Forced: true})
	c6 := clusterOf(p6)
	p7 := change(p6, kind.VirtualService)
	if c7 := clusterOf(p7); c7 != c6 {
		t.Error("after a forced rebuild, a route change rebuilt the clusters")
	}
	if c6 == clusterOf(p5) {
		t.Error("a forced push kept the clusters")
	}
}

// storePut creates or updates an object of the store (config in namespace
// ns, domain cluster.local), failing the test on error.
func storePut(t *testing.T, store model.ConfigStore, g config.GroupVersionKind, ns, name string, spec config.Spec) {
	t.Helper()
	c := config.Config{Meta: config.Meta{GroupVersionKind: g, Name: name, Namespace: ns, Domain: "cluster.local"}, Spec: spec}
	if old := store.Get(g, name, ns); old != nil {
		c.ResourceVersion = old.ResourceVersion
		if _, err := store.Update(c); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := store.Create(c); err != nil {
		t.Fatal(err)
	}
}
