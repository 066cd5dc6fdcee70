package waypoint_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/endpoint"
	"github.com/meshplane/istiod/pilot/pkg/networking/waypoint"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// A waypoint's inbound-vip endpoints across networks, as Istio's network
// filter treats them for a proxy that is not a sidecar: an endpoint of
// another network that takes mTLS goes through its network's gateway (an
// HBONE-only gateway counts, on its port), one that does not is dropped,
// one of a network without gateways is sent as it is; the waypoint's own
// network keeps its HBONE endpoints.
func TestLoadAssignmentThroughGateways(t *testing.T) {
	ep := func(ip, network, tls string) *model.IstioEndpoint {
		return &model.IstioEndpoint{Addresses: []string{ip}, EndpointPort: 8080, ServicePortName: "http",
			Network: network, TLSMode: tls, Namespace: "shop", WorkloadName: "cart",
			Locality: model.Locality{ClusterID: "Kubernetes"}, HealthStatus: model.Healthy}
	}
	eps := []*model.IstioEndpoint{
		ep("10.244.1.1", "nw1", ""),                           // local, ambient: HBONE
		ep("10.20.0.1", "nw2", "istio"),                       // remote, sidecar: through nw2's gateway
		ep("10.20.0.2", "nw2", ""),                            // remote, no mTLS: dropped
		ep("10.30.0.1", "nw3", "istio"),                       // no gateway for nw3: as it is
		ep("10.20.0.3", "nw2", "istio"),                       // remote, sidecar: adds its weight to the gateway
		ep("10.40.0.1", "nw4", model.IstioMutualTLSModeLabel), // HBONE-only gateway
	}
	gws := model.NewNetworkGateways([]model.NetworkGateway{
		{Network: "nw2", Cluster: "Kubernetes", Addr: "172.18.0.10", Port: 15443},
		{Network: "nw4", Cluster: "Kubernetes", Addr: "172.18.0.40", HBONEPort: 15008},
	})
	o := endpoint.Options{PortName: "http", Network: "nw1", Gateways: gws, IPMode: model.IPv4, Sidecar: true}
	la := waypoint.LoadAssignment("inbound-vip|8080|http|cart.shop.svc.cluster.local", o, eps,
		func(network, ip string) bool { return network == "nw1" && ip == "10.244.1.1" })
	if len(la.GetEndpoints()) != 1 {
		t.Fatalf("localities: %v", la.GetEndpoints())
	}
	type sent struct {
		addr     string
		internal string
		port     uint32
		weight   uint32
	}
	var got []sent
	for _, lb := range la.GetEndpoints()[0].GetLbEndpoints() {
		a := lb.GetEndpoint().GetAddress()
		got = append(got, sent{addr: a.GetSocketAddress().GetAddress(), port: a.GetSocketAddress().GetPortValue(),
			internal: a.GetEnvoyInternalAddress().GetEndpointId(), weight: lb.GetLoadBalancingWeight().GetValue()})
	}
	// the scale factor is 1 (one gateway per network); the gateways come
	// last, sorted
	want := []sent{
		{internal: "10.244.1.1:8080", weight: 1},
		{addr: "10.30.0.1", port: 8080, weight: 1},
		{addr: "172.18.0.10", port: 15443, weight: 2},
		{addr: "172.18.0.40", port: 0, weight: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("endpoints:\n got %v\nwant %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("endpoint %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	gw := la.GetEndpoints()[0].GetLbEndpoints()[2]
	if m := gw.GetMetadata().GetFilterMetadata()["envoy.transport_socket_match"].GetFields()["tlsMode"].GetStringValue(); m != "istio" {
		t.Errorf("gateway endpoint tlsMode %q, want istio", m)
	}
	if w := la.GetEndpoints()[0].GetLoadBalancingWeight().GetValue(); w != 5 {
		t.Errorf("locality weight %d, want 5", w)
	}
}

// The inline endpoints of a DNS service's inbound-vip cluster go through
// the gateways of their network under the waypoint's view.
func TestDNSClusterThroughGateways(t *testing.T) {
	svc := service("stock.ext.example", "shop", &model.Port{Name: "tcp", Port: 9000, Protocol: protocol.TCP})
	svc.Resolution = model.DNSLB
	svc.Attributes.ServiceRegistry = model.External
	ep := func(host, network string) *model.IstioEndpoint {
		return &model.IstioEndpoint{Addresses: []string{host}, EndpointPort: 9000, ServicePortName: "tcp", Network: network,
			TLSMode: model.IstioMutualTLSModeLabel, Namespace: "shop", Locality: model.Locality{ClusterID: "Kubernetes"}}
	}
	view := cluster.EndpointView{Network: "nw1", Gateways: model.NewNetworkGateways([]model.NetworkGateway{
		{Network: "nw2", Cluster: "Kubernetes", Addr: "172.18.0.10", Port: 15443}})}
	s := waypoint.Service{Service: svc, Endpoints: []*model.IstioEndpoint{ep("stock.nw2.example", "nw2"), ep("stock.local.example", "")},
		EndpointView: view}
	var got []string
	for _, c := range waypoint.Clusters([]waypoint.Service{s}, waypoint.Options{}) {
		if c.GetName() != "inbound-vip|9000|tcp|stock.ext.example" {
			continue
		}
		for _, g := range c.GetLoadAssignment().GetEndpoints() {
			for _, lb := range g.GetLbEndpoints() {
				sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
				got = append(got, sa.GetAddress()+":"+strconv.Itoa(int(sa.GetPortValue())))
			}
		}
	}
	if want := []string{"stock.local.example:9000", "172.18.0.10:15443"}; !slices.Equal(got, want) {
		t.Errorf("inline endpoints %v, want %v", got, want)
	}
}
