package model

import "slices"

// networkGatewayIndex holds the network gateways of the snapshot: those
// meshNetworks gives by address and those the registries found (labelled
// Services, registryServiceName). It is rebuilt with the services
// (a gateway Service is a service) and on every forced push (a meshNetworks
// or namespace network change); an unchanged set keeps the previous
// snapshot's pointer, so the EDS cache keyed by it stays warm.
//
// Gateways whose address is a hostname are replaced by one per address
// the GatewayResolver knows for it (none without a resolver); the resolver
// forces a push when an answer changes.
//
// Kinds: none of its own; it depends on the services index (every
// registry reports service changes under ServiceEntry).
type networkGatewayIndex struct {
	indexBase
	gateways *NetworkGateways
	// unresolved is every gateway, hostnames included (sorted, nil when
	// none)
	unresolved []NetworkGateway
}

func buildNetworkGatewayIndex(bc *buildContext) *networkGatewayIndex {
	var gws []NetworkGateway
	if f := bc.env.opts.MeshNetworks; f != nil {
		gws = append(gws, MeshNetworksGateways(f())...)
	}
	if src := bc.env.opts.NetworkGateways; src != nil {
		gws = append(gws, src.NetworkGateways()...)
	}
	x := &networkGatewayIndex{gateways: NewNetworkGateways(ResolveGateways(gws, bc.env.opts.GatewayResolver))}
	if len(gws) > 0 {
		x.unresolved = slices.Compact(SortGateways(gws))
	}
	if old, ok := bc.oldIndex().(*networkGatewayIndex); ok && old != nil && old.gateways.Equal(x.gateways) &&
		slices.Equal(old.unresolved, x.unresolved) {
		return old
	}
	return x
}

// NetworkGateways is the snapshot's network gateways (never nil; shared,
// read-only).
func (p *PushContext) NetworkGateways() *NetworkGateways {
	if p == nil || p.networkGateways == nil {
		return noNetworkGateways
	}
	return p.networkGateways.gateways
}

// UnresolvedNetworkGateways lists every network gateway, those whose
// address is a hostname included (nil when none; shared, read-only).
func (p *PushContext) UnresolvedNetworkGateways() []NetworkGateway {
	if p == nil || p.networkGateways == nil {
		return nil
	}
	return p.networkGateways.unresolved
}

var noNetworkGateways = NewNetworkGateways(nil)
