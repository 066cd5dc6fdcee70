package endpoint_test

import (
	"encoding/json"
	"reflect"
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/endpoint"
)

func netEP(addr, network, cluster, tls string) *model.IstioEndpoint {
	return &model.IstioEndpoint{Addresses: []string{addr}, EndpointPort: 9080, ServicePortName: "http",
		HealthStatus: model.Healthy, Network: network, TLSMode: tls, Namespace: "ns1", WorkloadName: "w-" + addr,
		Locality: model.Locality{ClusterID: cluster}}
}

// sent lists "address:port weight" of each endpoint of the assignment.
type sentEP struct {
	Addr   string
	Port   uint32
	Weight uint32
}

func sent(la *endpointv3.ClusterLoadAssignment) []sentEP {
	var out []sentEP
	for _, g := range la.Endpoints {
		for _, lb := range g.LbEndpoints {
			sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
			out = append(out, sentEP{sa.GetAddress(), sa.GetPortValue(), lb.GetLoadBalancingWeight().GetValue()})
		}
	}
	return out
}

func gw(network, cluster, addr string) model.NetworkGateway {
	return model.NetworkGateway{Network: network, Cluster: cluster, Addr: addr, Port: 15443}
}

func TestNetworkFilter(t *testing.T) {
	eps := []*model.IstioEndpoint{
		netEP("10.1.0.1", "network1", "cluster1", "istio"),
		netEP("10.1.0.2", "", "cluster1", "disabled"),
		netEP("10.2.0.1", "network2", "cluster2", "istio"),
		netEP("10.2.0.2", "network2", "cluster2", "istio"),
		netEP("10.2.0.3", "network2", "cluster2", "disabled"),
		netEP("10.3.0.1", "network3", "cluster3", "istio"),
	}
	one := model.NewNetworkGateways([]model.NetworkGateway{gw("network2", "cluster2", "35.0.0.1")})
	two := model.NewNetworkGateways([]model.NetworkGateway{gw("network2", "cluster2", "35.0.0.1"), gw("network2", "cluster2", "35.0.0.2")})
	for _, tc := range []struct {
		name string
		o    endpoint.Options
		want []sentEP
	}{{
		name: "no gateways: every endpoint",
		o:    endpoint.Options{Network: "network1"},
		want: []sentEP{{"10.1.0.1", 9080, 1}, {"10.1.0.2", 9080, 1}, {"10.2.0.1", 9080, 1}, {"10.2.0.2", 9080, 1}, {"10.2.0.3", 9080, 1}, {"10.3.0.1", 9080, 1}},
	}, {
		// network1 and unset kept; network2's mTLS endpoints behind its
		// gateway, weighted by their number; its plain-text one dropped;
		// network3 has no gateway: its endpoint is sent as it is
		name: "one gateway",
		o:    endpoint.Options{Network: "network1", Gateways: one, Sidecar: true},
		want: []sentEP{{"10.1.0.1", 9080, 1}, {"10.1.0.2", 9080, 1}, {"10.3.0.1", 9080, 1}, {"35.0.0.1", 15443, 2}},
	}, {
		// the scale factor is 2: every weight doubles, each of the two
		// endpoints splits its 2 between the gateways
		name: "two gateways split",
		o:    endpoint.Options{Network: "network1", Gateways: two, Sidecar: true},
		want: []sentEP{{"10.1.0.1", 9080, 2}, {"10.1.0.2", 9080, 2}, {"10.3.0.1", 9080, 2}, {"35.0.0.1", 15443, 2}, {"35.0.0.2", 15443, 2}},
	}, {
		// network1 has no gateway: its endpoint is sent as it is
		name: "proxy on the gateway's network: direct",
		o:    endpoint.Options{Network: "network2", Gateways: one, Sidecar: true},
		want: []sentEP{{"10.1.0.1", 9080, 1}, {"10.1.0.2", 9080, 1}, {"10.2.0.1", 9080, 1}, {"10.2.0.2", 9080, 1}, {"10.2.0.3", 9080, 1}, {"10.3.0.1", 9080, 1}},
	}, {
		// Istio's forceGateway: a proxy without a network reaches
		// network2 through its gateway, the rest directly
		name: "proxy without a network",
		o:    endpoint.Options{Gateways: one, Sidecar: true},
		want: []sentEP{{"10.1.0.1", 9080, 1}, {"10.1.0.2", 9080, 1}, {"10.3.0.1", 9080, 1}, {"35.0.0.1", 15443, 2}},
	}, {
		name: "IPv6 proxy: no gateway of its family, network2 dropped",
		o:    endpoint.Options{Network: "network1", Gateways: one, Sidecar: true, IPMode: model.IPv6},
		want: []sentEP{{"10.1.0.1", 9080, 1}, {"10.1.0.2", 9080, 1}, {"10.3.0.1", 9080, 1}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			la := endpoint.Build("outbound|9080||reviews.ns1.svc.cluster.local", eps, tc.o)
			if err := la.ValidateAll(); err != nil {
				t.Fatal(err)
			}
			if got := sent(la); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("sent %v\nwant %v", got, tc.want)
			}
		})
	}
}

// A gateway endpoint carries Istio's metadata: TLS mode istio and the
// gateway's cluster, no workload; the locality weight is the sum.
func TestGatewayEndpointShape(t *testing.T) {
	la := endpoint.Build("c", []*model.IstioEndpoint{netEP("10.2.0.1", "network2", "cluster2", "istio")}, endpoint.Options{
		Network: "network1", Sidecar: true,
		Gateways: model.NewNetworkGateways([]model.NetworkGateway{gw("network2", "cluster2", "35.0.0.1")}),
	})
	b, _ := protojson.Marshal(la)
	want := `{"clusterName":"c","endpoints":[{"locality":{},"lbEndpoints":[{"endpoint":{"address":{"socketAddress":{"address":"35.0.0.1","portValue":15443}}},
		"metadata":{"filterMetadata":{"envoy.transport_socket_match":{"tlsMode":"istio"},"istio":{"workload":";;;;cluster2"}}},"loadBalancingWeight":1}],
		"loadBalancingWeight":1}]}`
	var g, w any
	_ = json.Unmarshal(b, &g)
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got %s\nwant %s", b, want)
	}
}

// A locality whose endpoints all went keeps an empty group without weight,
// as Istio's filter leaves it.
func TestNetworkFilterEmptiesLocality(t *testing.T) {
	e := netEP("10.2.0.3", "network2", "cluster2", "disabled")
	e.Locality.Label = "r2/z2"
	la := endpoint.Build("c", []*model.IstioEndpoint{netEP("10.1.0.1", "network1", "cluster1", "istio"), e}, endpoint.Options{
		Network: "network1", Sidecar: true,
		Gateways: model.NewNetworkGateways([]model.NetworkGateway{gw("network2", "cluster2", "35.0.0.1")}),
	})
	if len(la.Endpoints) != 2 || len(la.Endpoints[1].LbEndpoints) != 0 || la.Endpoints[1].LoadBalancingWeight != nil ||
		la.Endpoints[1].Locality.GetZone() != "z2" {
		t.Errorf("emptied locality: %v", la)
	}
}

// Gateways of the endpoint's cluster are preferred over the network's
// others; sidecars skip HBONE-only gateways, gateways keep them.
func TestGatewaySelection(t *testing.T) {
	hbone := model.NetworkGateway{Network: "network2", Cluster: "cluster3", Addr: "35.0.0.9", HBONEPort: 15008}
	gws := model.NewNetworkGateways([]model.NetworkGateway{gw("network2", "cluster2", "35.0.0.1"), gw("network2", "cluster4", "35.0.0.2"), hbone})
	eps := []*model.IstioEndpoint{netEP("10.2.0.1", "network2", "cluster2", "istio"), netEP("10.3.0.1", "network2", "cluster3", "istio")}
	// scale factor lcm(3 per network, 1 per network and cluster) = 3
	got := sent(endpoint.Build("c", eps, endpoint.Options{Network: "network1", Gateways: gws, Sidecar: true}))
	// cluster2's endpoint: its cluster's gateway (3); cluster3's: only an
	// HBONE gateway there, which sidecars skip, leaving none, so (as in
	// Istio, which does not fall back to the network's others) it is sent
	// as it is
	want := []sentEP{{"10.3.0.1", 9080, 3}, {"35.0.0.1", 15443, 3}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sidecar: %v, want %v", got, want)
	}
	got = sent(endpoint.Build("c", eps, endpoint.Options{Network: "network1", Gateways: gws}))
	want = []sentEP{{"35.0.0.1", 15443, 3}, {"35.0.0.9", 0, 3}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("gateway proxy: %v, want %v", got, want)
	}
}

func TestNetworkGatewaysIndex(t *testing.T) {
	gws := model.NewNetworkGateways([]model.NetworkGateway{
		gw("n2", "c2", "35.0.0.2"), gw("n2", "c2", "35.0.0.1"), gw("n2", "c2", "35.0.0.1"), // duplicate
		gw("n3", "c3", "35.0.0.3"), gw("n3", "c4", "35.0.0.4"), gw("n3", "c4", "35.0.0.5"), gw("n3", "c4", "35.0.0.6"),
		gw("n4", "c4", "gw.example.com"), // not an IP: left out
	})
	if n := len(gws.All()); n != 6 || gws.All()[0].Addr != "35.0.0.1" {
		t.Errorf("all: %v", gws.All())
	}
	// per network 2 and 4, per network and cluster 2, 1 and 3: lcm 12
	if f := gws.ScaleFactor(); f != 12 {
		t.Errorf("scale factor %d, want 12", f)
	}
	if len(gws.ForNetworkAndCluster("n3", "c4")) != 3 || len(gws.ForNetwork("n3")) != 4 || len(gws.ForNetwork("n4")) != 0 {
		t.Error("lookups")
	}
	var none *model.NetworkGateways
	if none.IsMultiNetworkEnabled() || none.ScaleFactor() != 1 || model.NewNetworkGateways(nil).IsMultiNetworkEnabled() {
		t.Error("empty")
	}
}

// A proxy's REQUESTED_NETWORK_VIEW keeps the endpoints of those networks
// and those without a network, as Istio's ProxyView.
func TestNetworkView(t *testing.T) {
	eps := []*model.IstioEndpoint{netEP("10.1.0.1", "network1", "c1", "istio"), netEP("10.1.0.2", "", "c1", "istio"),
		netEP("10.2.0.1", "network2", "c2", "istio")}
	got := sent(endpoint.Build("c", eps, endpoint.Options{NetworkView: []string{"network2"}}))
	want := []sentEP{{"10.1.0.2", 9080, 1}, {"10.2.0.1", 9080, 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("view network2: %v, want %v", got, want)
	}
}
