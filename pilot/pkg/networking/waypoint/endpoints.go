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
// service port (and subset: the endpoints with subsetLabels): its
// endpoints grouped by locality; those that take HBONE
// (hbone says, by network and IP) are addressed to connect_originate with
// their address as original destination, the others directly.
func LoadAssignment(name, portName string, subsetLabels map[string]string, eps []*model.IstioEndpoint,
	hbone func(network, ip string) bool,
) *endpointv3.ClusterLoadAssignment {
	byAddr := map[string]*model.IstioEndpoint{}
	for _, ep := range eps {
		if ep.ServicePortName == portName {
			byAddr[net.JoinHostPort(ep.FirstAddress(), strconv.Itoa(int(ep.EndpointPort)))] = ep
		}
	}
	la := endpoint.Build(name, eps, endpoint.Options{PortName: portName, SubsetLabels: subsetLabels})
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
