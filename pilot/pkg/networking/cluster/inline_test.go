package cluster_test

import (
	"slices"
	"strconv"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

type staticGateways []model.NetworkGateway

func (s staticGateways) NetworkGateways() []model.NetworkGateway { return s }

func dnsEndpoint(addr, cluster, network, version string) *model.IstioEndpoint {
	return &model.IstioEndpoint{Addresses: []string{addr}, EndpointPort: 53, ServicePortName: "tcp", Network: network,
		TLSMode: model.IstioMutualTLSModeLabel, Labels: map[string]string{"version": version},
		Locality: model.Locality{ClusterID: cluster}}
}

// inlineAddrs lists "addr:port" of every inline endpoint of the cluster
// named name ("none" when no such cluster was built).
func inlineAddrs(cs []*clusterv3.Cluster, name string) []string {
	for _, c := range cs {
		if c.Name != name {
			continue
		}
		out := []string{}
		for _, l := range c.GetLoadAssignment().GetEndpoints() {
			for _, lb := range l.GetLbEndpoints() {
				sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
				out = append(out, sa.GetAddress()+":"+strconv.Itoa(int(sa.GetPortValue())))
			}
		}
		return out
	}
	return []string{"none"}
}

// The inline endpoints of DNS clusters follow EDS's rules, as Istio builds
// them with EDS's endpoint builder: a cluster-local host keeps the
// proxy's cluster's endpoints only; with network gateways, endpoints of
// another network are replaced by their gateways; REQUESTED_NETWORK_VIEW
// hides other networks; a cluster (and its subsets) the proxy sees no
// endpoint of is not built.
func TestInlineEndpointsView(t *testing.T) {
	local := service("dns", "kube-system", 53, protocol.TCP, model.DNSLB) // cluster-local by default
	global := service("ext", "default", 53, protocol.TCP, model.DNSRoundRobinLB)
	eps := []*model.IstioEndpoint{
		dnsEndpoint("a.example.com", "c1", "n1", "v1"),
		dnsEndpoint("b.example.com", "c2", "n2", "v1"),
		dnsEndpoint("c.example.com", "c2", "n2", "v2"),
	}
	dr := &config.Config{Meta: config.Meta{Name: "dr", Namespace: "kube-system"}, Spec: &networking.DestinationRule{
		Host: local.Hostname, Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}},
			{Name: "v2", Labels: map[string]string{"version": "v2"}}}}}
	build := func(svc *model.Service, v cluster.EndpointView, eps []*model.IstioEndpoint, dr *config.Config) []*clusterv3.Cluster {
		return cluster.BuildOutbound(svc, cluster.Options{Mesh: mesh.DefaultMeshConfig(), DestinationRule: dr, View: v,
			Endpoints: func(*model.Port) []*model.IstioEndpoint { return eps }})
	}
	name := func(svc *model.Service, subset string) string {
		return cluster.SubsetKey(cluster.Outbound, subset, svc.Hostname, 53)
	}

	t.Run("cluster-local", func(t *testing.T) {
		cs := build(local, cluster.EndpointView{LocalCluster: "c1"}, eps, dr)
		if got := inlineAddrs(cs, name(local, "")); !slices.Equal(got, []string{"a.example.com:53"}) {
			t.Errorf("default cluster: %v, want only c1's", got)
		}
		if got := inlineAddrs(cs, name(local, "v2")); !slices.Equal(got, []string{"none"}) {
			t.Errorf("subset v2 (only c2 endpoints): %v, want no cluster", got)
		}
		cs = build(local, cluster.EndpointView{LocalCluster: "c3"}, eps, dr)
		if len(cs) != 0 {
			t.Errorf("a proxy of a cluster without endpoints: %d clusters, want none (nor subsets)", len(cs))
		}
		// no view: every endpoint
		if got := inlineAddrs(build(local, cluster.EndpointView{}, eps, nil), name(local, "")); len(got) != 3 {
			t.Errorf("without a view: %v", got)
		}
	})

	gws := model.NewNetworkGateways([]model.NetworkGateway{{Network: "n2", Cluster: "c2", Addr: "35.0.0.1", Port: 15443}})
	t.Run("networks", func(t *testing.T) {
		cs := build(global, cluster.EndpointView{Network: "n1", Gateways: gws}, eps, nil)
		if got := inlineAddrs(cs, name(global, "")); !slices.Equal(got, []string{"a.example.com:53", "35.0.0.1:15443"}) {
			t.Errorf("other network through its gateway: %v", got)
		}
		cs = build(global, cluster.EndpointView{Network: "n1", NetworkView: []string{"n1"}}, eps, nil)
		if got := inlineAddrs(cs, name(global, "")); !slices.Equal(got, []string{"a.example.com:53"}) {
			t.Errorf("REQUESTED_NETWORK_VIEW n1: %v", got)
		}
	})

	t.Run("ViewFor", func(t *testing.T) {
		env := model.NewEnvironment(model.EnvironmentOptions{NetworkGateways: staticGateways{{Network: "n2", Cluster: "c2", Addr: "35.0.0.1", Port: 15443}}})
		push := model.InitContext(env, nil, nil)
		proxy := &model.Proxy{Metadata: &model.NodeMetadata{ClusterID: "c1", Network: "n1"}}
		v, key := cluster.ViewFor(push, proxy, local)
		if v.LocalCluster != "c1" || key == "" {
			t.Errorf("cluster-local DNS service: %+v %q", v, key)
		}
		// as Istio's stale Unresolved gateways: other networks' endpoints
		// are sent as they are, even with gateways
		if v.Gateways != nil {
			t.Errorf("view with gateways: %+v", v)
		}
		vg, key := cluster.ViewFor(push, proxy, global)
		if key != "" {
			t.Errorf("DNS service, not cluster-local, with gateways: key %q, want none", key)
		}
		if got := inlineAddrs(build(global, vg, eps, nil), name(global, "")); len(got) != 3 || got[1] != "b.example.com:53" {
			t.Errorf("other network's endpoints with gateways in the snapshot: %v, want them as they are", got)
		}
		eds := service("eds", "kube-system", 53, protocol.TCP, model.ClientSideLB)
		if v, key := cluster.ViewFor(push, proxy, eds); key != "" || v.LocalCluster != "" {
			t.Errorf("EDS service: %+v %q, want no view", v, key)
		}
		plain := model.InitContext(model.NewEnvironment(model.EnvironmentOptions{Mesh: func() *meshconfig.MeshConfig { return mesh.DefaultMeshConfig() }}), nil, nil)
		if v, key := cluster.ViewFor(plain, proxy, global); key != "" || v.Gateways != nil {
			t.Errorf("DNS service, no gateways, not cluster-local: %+v %q", v, key)
		}
		if _, key2 := cluster.ViewFor(plain, &model.Proxy{Metadata: &model.NodeMetadata{ClusterID: "c2"}}, local); key2 == "" {
			t.Errorf("cluster-local DNS service without gateways: no key")
		}
	})
}
