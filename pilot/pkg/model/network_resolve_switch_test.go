package model

import (
	"context"
	"slices"
	"testing"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pkg/log/logtest"
)

// RESOLVE_HOSTNAME_GATEWAYS=false (NewGatewayResolver(false, …)): as in
// Istio, no gateway hostname is looked up; gateways given by hostname (a
// registry's or meshNetworks') are left out of the gateways EDS uses, with
// Istio's warning once per name, and stay among the unresolved ones. With
// only such gateways the mesh is not multi-network. With true it is the
// DNS resolver.
func TestGatewayResolverSwitch(t *testing.T) {
	logs := logtest.Capture(t)
	lookup := func(_ context.Context, name string) ([]string, error) {
		t.Errorf("%s looked up with RESOLVE_HOSTNAME_GATEWAYS=false", name)
		return []string{"52.0.0.1"}, nil
	}
	stop := make(chan struct{})
	defer close(stop)
	opts := DNSGatewayResolverOptions{Lookup: lookup, Stop: stop}
	if _, ok := NewGatewayResolver(true, opts).(*DNSGatewayResolver); !ok {
		t.Errorf("NewGatewayResolver(true) is not the DNS resolver")
	}

	src := &gatewaySource{gws: []NetworkGateway{
		{Network: "n2", Cluster: "c2", Addr: "35.0.0.1", Port: 15443},
		{Network: "n2", Cluster: "c2", Addr: "elb.example.com", Port: 15443},
	}}
	mn := &meshconfig.MeshNetworks{Networks: map[string]*meshconfig.Network{"vm": {Gateways: []*meshconfig.Network_IstioNetworkGateway{
		{Gw: &meshconfig.Network_IstioNetworkGateway_Address{Address: "vm-gw.example.com"}, Port: 443},
	}}}}
	res := NewGatewayResolver(false, opts)
	env := NewEnvironment(EnvironmentOptions{NetworkGateways: src, MeshNetworks: func() *meshconfig.MeshNetworks { return mn },
		GatewayResolver: res})
	p := InitContext(env, nil, nil)
	want := []NetworkGateway{{Network: "n2", Cluster: "c2", Addr: "35.0.0.1", Port: 15443}}
	if got := p.NetworkGateways().All(); !slices.Equal(got, want) {
		t.Fatalf("gateways %v\nwant %v", got, want)
	}
	if got := len(p.UnresolvedNetworkGateways()); got != 3 {
		t.Errorf("unresolved gateways: %d, want 3 (hostnames included)", got)
	}
	// built again: no second warning for a name already reported
	InitContext(env, nil, nil)
	for _, name := range []string{"elb.example.com", "vm-gw.example.com"} {
		if got := logs.Lines("warn", "Failed parsing gateway address "+name, "RESOLVE_HOSTNAME_GATEWAYS"); len(got) != 1 {
			t.Errorf("warnings for %s: %q, want one", name, got)
		}
	}

	hostnamesOnly := &gatewaySource{gws: []NetworkGateway{{Network: "n2", Cluster: "c2", Addr: "elb.example.com", Port: 15443}}}
	p = InitContext(NewEnvironment(EnvironmentOptions{NetworkGateways: hostnamesOnly, GatewayResolver: res}), nil, nil)
	if p.NetworkGateways().IsMultiNetworkEnabled() {
		t.Errorf("multi-network with only a hostname gateway, unresolved: %v", p.NetworkGateways().All())
	}
}
