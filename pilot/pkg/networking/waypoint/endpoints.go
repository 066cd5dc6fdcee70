package waypoint

import (
	"net"
	"strconv"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/endpoint"
)

// LoadAssignment is the assignment of the inbound-vip cluster name of a
// service port (and subset), as o selects them (o.PortName, o.SubsetLabels;
// the waypoint's network, the network gateways, its IP family and network
// view): its endpoints grouped by locality, those of another network
// replaced by that network's gateways as Istio's network filter replaces
// them for waypoints (a waypoint is no sidecar: gateways without an mTLS
// port count); those that take HBONE (hbone says, by network and IP) are
// addressed to connect_originate with their address as original
// destination, the others (gateways included) directly.
func LoadAssignment(name string, o endpoint.Options, eps []*model.IstioEndpoint,
	hbone func(network, ip string) bool,
) *endpointv3.ClusterLoadAssignment {
	o.Sidecar = false
	byAddr := map[string]*model.IstioEndpoint{}
	for _, ep := range eps {
		if ep.ServicePortName == o.PortName {
			byAddr[net.JoinHostPort(ep.FirstAddress(), strconv.Itoa(int(ep.EndpointPort)))] = ep
		}
	}
	la := endpoint.Build(name, eps, o)
	for _, g := range la.Endpoints {
		for _, lb := range g.LbEndpoints {
			sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
			if sa == nil {
				continue
			}
			target := net.JoinHostPort(sa.GetAddress(), strconv.Itoa(int(sa.GetPortValue())))
			ep := byAddr[target]
			if ep == nil || hbone == nil || !hbone(ep.Network, sa.GetAddress()) {
				continue
			}
			lb.HostIdentifier = &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: internalAddress(ConnectOriginate, target)}}
			if lb.Metadata != nil {
				// HBONE needs no transport socket match
				delete(lb.Metadata.FilterMetadata, "envoy.transport_socket_match")
				lb.Metadata.FilterMetadata[originalDstKey] = &structpb.Struct{Fields: map[string]*structpb.Value{
					"local": structpb.NewStringValue(target)}}
			}
		}
	}
	return la
}
