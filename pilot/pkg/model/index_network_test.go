package model

import (
	"slices"
	"testing"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

type gatewaySource struct{ gws []NetworkGateway }

func (g *gatewaySource) NetworkGateways() []NetworkGateway { return slices.Clone(g.gws) }

// The snapshot's gateways: meshNetworks' by address (no cluster) and the
// registries'; rebuilt with the services, the same pointer while unchanged
// (the EDS cache is keyed by it); a hostname is only among the unresolved.
func TestNetworkGatewayIndex(t *testing.T) {
	src := &gatewaySource{gws: []NetworkGateway{
		{Network: "n2", Cluster: "c2", Addr: "35.0.0.1", Port: 15443},
		{Network: "n2", Cluster: "c2", Addr: "gw.example.com", Port: 15443},
	}}
	mn := &meshconfig.MeshNetworks{Networks: map[string]*meshconfig.Network{"vm": {Gateways: []*meshconfig.Network_IstioNetworkGateway{
		{Gw: &meshconfig.Network_IstioNetworkGateway_Address{Address: "192.0.2.1"}, Port: 443},
		{Gw: &meshconfig.Network_IstioNetworkGateway_RegistryServiceName{RegistryServiceName: "gw.istio-system.svc.cluster.local"}, Port: 443},
	}}}}
	env := NewEnvironment(EnvironmentOptions{NetworkGateways: src, MeshNetworks: func() *meshconfig.MeshNetworks { return mn }})
	p1 := InitContext(env, nil, nil)
	// by address as a string, as Istio sorts them
	want := []NetworkGateway{{Network: "vm", Addr: "192.0.2.1", Port: 443}, {Network: "n2", Cluster: "c2", Addr: "35.0.0.1", Port: 15443}}
	if got := p1.NetworkGateways().All(); !slices.Equal(got, want) {
		t.Fatalf("gateways %v, want %v", got, want)
	}
	if got := p1.UnresolvedNetworkGateways(); len(got) != 3 || got[2].Addr != "gw.example.com" {
		t.Errorf("unresolved %v", got)
	}
	svcChange := &PushRequest{Full: true, ConfigsUpdated: NewConfigKeys(ConfigKey{Kind: kind.ServiceEntry, Name: "x", Namespace: "default"})}
	p2 := InitContext(env, p1, svcChange)
	if !slices.Contains(p2.Rebuilt, IndexNetworkGateways) || p2.NetworkGateways() != p1.NetworkGateways() {
		t.Errorf("unchanged gateways: rebuilt %v, same pointer %v", p2.Rebuilt, p2.NetworkGateways() == p1.NetworkGateways())
	}
	src.gws = src.gws[:1]
	src.gws[0].Addr = "35.0.0.2"
	p3 := InitContext(env, p2, svcChange)
	if p3.NetworkGateways() == p2.NetworkGateways() || p3.NetworkGateways().All()[1].Addr != "35.0.0.2" {
		t.Errorf("changed gateways not seen: %v", p3.NetworkGateways().All())
	}
	if got := NewPushContext().NetworkGateways(); got.IsMultiNetworkEnabled() || got.All() != nil {
		t.Errorf("no gateways: %v", got.All())
	}
}
