package generators

import (
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// The inline endpoints of a cluster-local DNS service are the proxy's
// cluster's, as Istio builds them with EDS's filter: proxies of two
// clusters under one snapshot each get their own (the cluster cache keeps
// them apart), and a proxy of a cluster without endpoints gets no such
// cluster.
func TestDNSClusterLocalInlineEndpoints(t *testing.T) {
	host := "dns.kube-system.svc.cluster.local" // cluster-local by default
	svc := &model.Service{Hostname: host, Ports: model.PortList{{Name: "tcp", Port: 53, Protocol: protocol.TCP}},
		Resolution: model.DNSLB, Attributes: model.ServiceAttributes{Name: "dns", Namespace: "kube-system", ServiceRegistry: model.External}}
	idx := model.NewEndpointIndex()
	for _, c := range []struct{ cluster, addr string }{{"c1", "one.example.com"}, {"c2", "two.example.com"}} {
		idx.UpdateServiceEndpoints(model.NewShardKey(model.Kubernetes, c.cluster), host, "kube-system", []*model.IstioEndpoint{{
			Addresses: []string{c.addr}, EndpointPort: 53, ServicePortName: "tcp", HealthStatus: model.Healthy,
			Locality: model.Locality{ClusterID: c.cluster}}})
	}
	env := model.NewEnvironment(model.EnvironmentOptions{ServiceDiscovery: services{svc}})
	push := model.InitContext(env, nil, nil)
	g := &SidecarGenerators{Discovery: services{svc}, Endpoints: idx}
	w := &xds.WatchedResource{TypeURL: xds.ClusterType}
	name := "outbound|53||" + host
	inline := func(cluster string, n int) []string {
		t.Helper()
		proxy := namespacedProxy(t, "shop", "", n)
		proxy.Metadata.ClusterID = cluster
		out, err := g.clusters(proxy, w, &model.PushRequest{Full: true, Push: push})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Resources {
			if r.Name != name {
				continue
			}
			var c clusterv3.Cluster
			if err := r.Resource.UnmarshalTo(&c); err != nil {
				t.Fatal(err)
			}
			var addrs []string
			for _, l := range c.GetLoadAssignment().GetEndpoints() {
				for _, lb := range l.GetLbEndpoints() {
					addrs = append(addrs, lb.GetEndpoint().GetAddress().GetSocketAddress().GetAddress())
				}
			}
			return addrs
		}
		return nil
	}
	if got := inline("c1", 1); !slices.Equal(got, []string{"one.example.com"}) {
		t.Errorf("proxy of c1: %v", got)
	}
	if got := inline("c2", 2); !slices.Equal(got, []string{"two.example.com"}) {
		t.Errorf("proxy of c2 (same snapshot): %v", got)
	}
	if got := inline("c3", 3); got != nil {
		t.Errorf("proxy of c3, which has no endpoint: cluster with %v, want none", got)
	}
}
