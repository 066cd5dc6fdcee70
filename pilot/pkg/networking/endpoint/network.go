package endpoint

import (
	"math"
	"net/netip"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// This file is split-horizon EDS, as Istio's EndpointsByNetworkFilter does
// it for sidecars and gateways when at least one network gateway exists:
//
//   - every endpoint weight is scaled by the gateways' scale factor (the
//     least common multiple of the number of gateways per network and per
//     network and cluster);
//   - an endpoint of the proxy's network, or without a network, or of a
//     network without gateways, is sent as it is (when it has an address);
//   - an endpoint of another network is replaced by the gateways of its
//     network in its cluster (else of its network), its weight split
//     evenly among them, provided its TLS mode is istio (the gateway routes
//     on the mTLS SNI) and a gateway of the proxy's IP family exists;
//     otherwise it is dropped;
//   - a proxy without a network reaches every endpoint that has one
//     through its network's gateways, when there are some.
//
// Gateway endpoints come after the others, sorted by address and port,
// with Istio's metadata: TLS mode istio, the gateway's cluster.

// inNetwork is Istio's Proxy.InNetwork: the same network, or either unset.
func inNetwork(proxy, ep string) bool { return proxy == "" || ep == "" || proxy == ep }

// byNetwork applies the network filter to one locality's endpoints.
func byNetwork(g *localityGroup, o Options) *localityGroup {
	out := &localityGroup{label: g.label}
	scale := o.Gateways.ScaleFactor()
	weights := map[model.NetworkGateway]uint32{}
	for i, lb := range g.lbs {
		ep := g.eps[i]
		gws := gatewaysFor(o, ep.Network, ep.Locality.ClusterID)
		reachable := byIPFamily(gws, o.IPMode)
		w := scaledWeight(lb.GetLoadBalancingWeight().GetValue(), scale)
		if w != lb.GetLoadBalancingWeight().GetValue() {
			lb = proto.Clone(lb).(*endpointv3.LbEndpoint)
			lb.LoadBalancingWeight = wrapperspb.UInt32(w)
		}
		forceGateway := o.Network == "" && ep.Network != "" && len(gws) > 0
		if !forceGateway && (inNetwork(o.Network, ep.Network) || len(gws) == 0) {
			if ep.FirstAddress() != "" {
				out.eps = append(out.eps, ep)
				out.lbs = append(out.lbs, lb)
			}
			continue
		}
		if len(reachable) == 0 || !takesMTLS(lb) {
			continue
		}
		per := w / uint32(len(reachable))
		for _, gw := range reachable {
			weights[gw] += per
		}
	}
	gws := make([]model.NetworkGateway, 0, len(weights))
	for gw := range weights {
		gws = append(gws, gw)
	}
	for _, gw := range model.SortGateways(gws) {
		w := weights[gw]
		if w == 0 {
			w = 1
		}
		ep := &model.IstioEndpoint{Network: gw.Network, TLSMode: model.IstioMutualTLSModeLabel,
			Locality: model.Locality{ClusterID: gw.Cluster}}
		out.eps = append(out.eps, ep)
		out.lbs = append(out.lbs, &endpointv3.LbEndpoint{
			HostIdentifier:      &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: address(gw.Addr, gw.Port)}},
			LoadBalancingWeight: wrapperspb.UInt32(w),
			Metadata:            metadata(ep),
		})
	}
	return out
}

// gatewaysFor are the gateways of a network in a cluster, else of the
// network; sidecars leave out gateways without an mTLS port (HBONE only).
func gatewaysFor(o Options, network, cluster string) []model.NetworkGateway {
	gws := o.Gateways.ForNetworkAndCluster(network, cluster)
	if len(gws) == 0 {
		gws = o.Gateways.ForNetwork(network)
	}
	if !o.Sidecar {
		return gws
	}
	var out []model.NetworkGateway
	for _, gw := range gws {
		if gw.Port != 0 {
			out = append(out, gw)
		}
	}
	return out
}

// byIPFamily keeps the gateways a single-stack proxy can reach.
func byIPFamily(gws []model.NetworkGateway, mode model.IPMode) []model.NetworkGateway {
	if mode == model.Dual {
		return gws
	}
	var out []model.NetworkGateway
	for _, gw := range gws {
		a, err := netip.ParseAddr(gw.Addr)
		if err != nil {
			continue
		}
		if a.Unmap().Is4() == (mode == model.IPv4) {
			out = append(out, gw)
		}
	}
	return out
}

// scaledWeight multiplies w (0: 1) by scale, saturating.
func scaledWeight(w, scale uint32) uint32 {
	if w == 0 {
		return scale
	}
	if w < math.MaxUint32/scale {
		return w * scale
	}
	return math.MaxUint32
}

// takesMTLS reports whether an endpoint is sent with TLS mode istio.
func takesMTLS(lb *endpointv3.LbEndpoint) bool {
	return lb.GetMetadata().GetFilterMetadata()["envoy.transport_socket_match"].GetFields()["tlsMode"].GetStringValue() ==
		model.IstioMutualTLSModeLabel
}
