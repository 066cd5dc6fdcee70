package cluster

import (
	"strings"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/endpoint"
)

// This file is what a proxy sees of the endpoints a DNS cluster carries
// inline (STRICT_DNS, LOGICAL_DNS). Istio builds them with the endpoint
// builder of EDS (EndpointBuilder.FromServiceEndpoints, called by its
// cluster builder for DNS clusters and their subsets), so its endpoint
// filter holds there too (filterIstioEndpoint):
//
//   - a cluster-local host keeps only the endpoints of the proxy's own
//     cluster;
//   - REQUESTED_NETWORK_VIEW hides the endpoints of other networks;
//   - a cluster none of whose endpoints is kept is not built at all
//     (buildCluster returns none for a DNS cluster without endpoints, and
//     the service's subsets are then skipped too).
//
// Endpoints of other networks are not replaced by gateways there. For a
// DNS cluster Istio's builder reads the NetworkManager's Unresolved
// gateways, which its reload updates only when the resolved gateways did
// not change (reload returns NetworkGateways.update(…) ||
// Unresolved.update(…)): a reload that adds or removes a gateway leaves
// Unresolved as it was. Istio's first reload sees no gateway yet (the
// registries have not synced), each later one that finds a gateway
// changes the resolved ones, so Unresolved holds none and the network
// filter passes every endpoint as it is, unscaled (checked against
// Istio's pilot-discovery in tests/differential TestMulticlusterNetworks).
// Istio's set catches up only on a reload that changes no resolved
// gateway (a meshNetworks reload that changes no gateway, a hostname
// gateway that does not resolve yet); that history is not modelled here.

// EndpointView is what a proxy sees of the inline endpoints of DNS
// clusters. The zero value sees every endpoint.
type EndpointView struct {
	// LocalCluster, when set, keeps only the endpoints of that cluster
	// (the proxy's, for a cluster-local host).
	LocalCluster string
	// NetworkView are the networks the proxy asked to see (nil: all;
	// endpoints without a network are always seen).
	NetworkView []string
	// Gateways, when it holds any, replace the endpoints of other
	// networks than Network (the proxy's) by theirs, as EDS does. ViewFor
	// sets none (see above); a caller that has Istio's gateways for its
	// clusters sets them.
	Gateways *model.NetworkGateways
	Network  string
}

// ViewFor is the view proxy has of the inline endpoints of svc, and a key
// naming it for caches: "" for a service without DNS clusters (its
// clusters do not depend on the view) and when the view is the zero one.
func ViewFor(push *model.PushContext, proxy *model.Proxy, svc *model.Service) (EndpointView, string) {
	if svc.Resolution != model.DNSLB && svc.Resolution != model.DNSRoundRobinLB {
		return EndpointView{}, ""
	}
	var v EndpointView
	var key []string
	if push.IsClusterLocal(svc) {
		v.LocalCluster = proxy.ClusterID()
		key = append(key, "local="+v.LocalCluster)
	}
	if proxy.Metadata != nil && len(proxy.Metadata.RequestedNetworkView) > 0 {
		v.NetworkView = proxy.Metadata.RequestedNetworkView
		key = append(key, "view="+strings.Join(v.NetworkView, ","))
	}
	if len(key) == 0 {
		return v, ""
	}
	return v, "|dns:" + strings.Join(key, ";")
}

// local keeps the endpoints of the view's cluster (all without one).
func (v EndpointView) local(eps []*model.IstioEndpoint) []*model.IstioEndpoint {
	if v.LocalCluster == "" {
		return eps
	}
	out := make([]*model.IstioEndpoint, 0, len(eps))
	for _, ep := range eps {
		if ep.Locality.ClusterID == v.LocalCluster {
			out = append(out, ep)
		}
	}
	return out
}

// buildInline is the load assignment of a DNS cluster under the view of
// opts: false when none of eps is kept (Istio builds no such cluster).
func buildInline(name string, eps []*model.IstioEndpoint, opts Options) (*endpointv3.ClusterLoadAssignment, bool) {
	v := opts.View
	la := endpoint.Build(name, v.local(eps), endpoint.Options{Network: v.Network, Gateways: v.Gateways,
		IPMode: opts.IPMode, Sidecar: !opts.Router, NetworkView: v.NetworkView})
	return la, len(eps) == 0 || len(la.Endpoints) > 0
}
