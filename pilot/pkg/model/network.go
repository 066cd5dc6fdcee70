package model

import (
	"cmp"
	"net/netip"
	"slices"

	meshconfig "istio.io/api/mesh/v1alpha1"
)

// This file is the model of networks and their gateways. Endpoints of a
// network other than a proxy's are reached through that network's gateways
// (east-west gateways); EDS replaces them by the gateways (see
// pilot/pkg/networking/endpoint).

// DefaultNetworkGatewayPort is the mTLS port of an east-west gateway
// Service labelled topology.istio.io/network, unless the
// networking.istio.io/gatewayPort label names another.
const DefaultNetworkGatewayPort = 15443

// DefaultNetworkGatewayHBONEPort is the HBONE port of an east-west gateway.
const DefaultNetworkGatewayHBONEPort = 15008

// GatewayPortLabel names the mTLS port of a network gateway Service.
const GatewayPortLabel = "networking.istio.io/gatewayPort"

// NamespacedName names an object. The JSON names are Go's, as Istio's
// /debug/networkz writes Kubernetes' NamespacedName.
type NamespacedName struct {
	Namespace string
	Name      string
}

// NetworkGateway is one address and port of a network's gateway. The JSON
// names are Istio's (/debug/networkz writes its struct, which has no tags).
type NetworkGateway struct {
	// Network is the network the gateway leads into.
	Network string
	// Cluster is the cluster the gateway runs in ("" for a meshNetworks
	// gateway given by address).
	Cluster string
	// Addr is the gateway's IP address (or a hostname, which EDS cannot
	// use).
	Addr string
	// Port is the gateway's mTLS port (0: the gateway has none).
	Port uint32
	// HBONEPort is the gateway's HBONE port (0: none).
	HBONEPort uint32
	// ServiceAccount the gateway runs as (unset for Service gateways).
	ServiceAccount NamespacedName
}

// NetworkGatewaySource lists the gateways a registry found (labelled
// Services, meshNetworks registryServiceName). The result is owned by the
// caller.
type NetworkGatewaySource interface {
	NetworkGateways() []NetworkGateway
}

// SortGateways sorts gws in place by address and port, as Istio orders
// gateways (then by the other fields, so the order is total), and
// returns it.
func SortGateways(gws []NetworkGateway) []NetworkGateway {
	slices.SortFunc(gws, compareGateways)
	return gws
}

func compareGateways(a, b NetworkGateway) int {
	return cmp.Or(cmp.Compare(a.Addr, b.Addr), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Network, b.Network),
		cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.HBONEPort, b.HBONEPort),
		cmp.Compare(a.ServiceAccount.Namespace, b.ServiceAccount.Namespace), cmp.Compare(a.ServiceAccount.Name, b.ServiceAccount.Name))
}

// MeshNetworksGateways are the gateways meshNetworks gives by address
// (those given by registryServiceName are found by the registries).
// They name no cluster, as in Istio.
func MeshNetworksGateways(mn *meshconfig.MeshNetworks) []NetworkGateway {
	var out []NetworkGateway
	for name, nw := range mn.GetNetworks() {
		for _, gw := range nw.GetGateways() {
			if addr := gw.GetAddress(); addr != "" {
				out = append(out, NetworkGateway{Network: name, Addr: addr, Port: gw.GetPort()})
			}
		}
	}
	return SortGateways(out)
}

type networkAndCluster struct{ network, cluster string }

// NetworkGateways is an immutable index of gateways by network and by
// network and cluster, with Istio's weight scale factor. A nil
// *NetworkGateways holds none.
type NetworkGateways struct {
	all                 []NetworkGateway
	byNetwork           map[string][]NetworkGateway
	byNetworkAndCluster map[networkAndCluster][]NetworkGateway
	lcm                 uint32
}

// GatewayResolver resolves the hostnames of network gateways (a load
// balancer that reports a hostname, a meshNetworks or Gateway address that
// is one), as Istio does in the control plane (RESOLVE_HOSTNAME_GATEWAYS,
// on by default). See network_dns.go.
type GatewayResolver interface {
	// Resolve returns the addresses known now for each of names (absent or
	// empty: none yet, or the name does not resolve). Names not asked for
	// are forgotten. It never blocks on DNS.
	Resolve(names []string) map[string][]string
}

// ResolveGateways replaces each gateway whose address is a hostname by one
// gateway per address the resolver knows for it (none when it knows none,
// or when r is nil); gateways with an IP are kept as they are.
func ResolveGateways(gws []NetworkGateway, r GatewayResolver) []NetworkGateway {
	var names []string
	for _, gw := range gws {
		if _, err := netip.ParseAddr(gw.Addr); err != nil && gw.Addr != "" && !slices.Contains(names, gw.Addr) {
			names = append(names, gw.Addr)
		}
	}
	var resolved map[string][]string
	if r != nil {
		resolved = r.Resolve(names)
	}
	if len(names) == 0 {
		return gws
	}
	out := make([]NetworkGateway, 0, len(gws))
	for _, gw := range gws {
		if _, err := netip.ParseAddr(gw.Addr); err == nil {
			out = append(out, gw)
			continue
		}
		for _, a := range resolved[gw.Addr] {
			g := gw
			g.Addr = a
			out = append(out, g)
		}
	}
	return out
}

// NewNetworkGateways indexes gws (duplicates dropped). Only gateways whose
// address is an IP are kept: EDS endpoints need one (resolve hostnames
// first with ResolveGateways).
func NewNetworkGateways(gws []NetworkGateway) *NetworkGateways {
	all := make([]NetworkGateway, 0, len(gws))
	for _, gw := range gws {
		if _, err := netip.ParseAddr(gw.Addr); err == nil {
			all = append(all, gw)
		}
	}
	SortGateways(all)
	all = slices.Compact(all)
	x := &NetworkGateways{all: all, byNetwork: map[string][]NetworkGateway{},
		byNetworkAndCluster: map[networkAndCluster][]NetworkGateway{}, lcm: 1}
	for _, gw := range all {
		x.byNetwork[gw.Network] = append(x.byNetwork[gw.Network], gw)
		nc := networkAndCluster{gw.Network, gw.Cluster}
		x.byNetworkAndCluster[nc] = append(x.byNetworkAndCluster[nc], gw)
	}
	// the least common multiple of the number of gateways per network and
	// per network and cluster: every endpoint weight is scaled by it, so
	// that splitting one among its gateways stays exact
	for _, l := range x.byNetwork {
		x.lcm = lcm(x.lcm, uint32(len(l)))
	}
	for _, l := range x.byNetworkAndCluster {
		x.lcm = lcm(x.lcm, uint32(len(l)))
	}
	return x
}

func lcm(a, b uint32) uint32 {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// IsMultiNetworkEnabled reports whether any gateway exists: without one,
// every endpoint is sent to every proxy whatever its network, as in Istio.
func (g *NetworkGateways) IsMultiNetworkEnabled() bool { return g != nil && len(g.all) > 0 }

// ScaleFactor is the factor endpoint weights are scaled by (1 without
// gateways), Istio's GetLBWeightScaleFactor.
func (g *NetworkGateways) ScaleFactor() uint32 {
	if g == nil {
		return 1
	}
	return g.lcm
}

// All lists the gateways sorted by address and port (nil when none);
// shared, read-only.
func (g *NetworkGateways) All() []NetworkGateway {
	if !g.IsMultiNetworkEnabled() {
		return nil
	}
	return g.all
}

// ForNetwork lists the gateways of a network; shared, read-only.
func (g *NetworkGateways) ForNetwork(network string) []NetworkGateway {
	if g == nil {
		return nil
	}
	return g.byNetwork[network]
}

// ForNetworkAndCluster lists the gateways of a network in one cluster;
// shared, read-only.
func (g *NetworkGateways) ForNetworkAndCluster(network, cluster string) []NetworkGateway {
	if g == nil {
		return nil
	}
	return g.byNetworkAndCluster[networkAndCluster{network, cluster}]
}

// Equal reports whether two indexes hold the same gateways.
func (g *NetworkGateways) Equal(o *NetworkGateways) bool {
	return slices.Equal(g.All(), o.All())
}
