package endpoint

import (
	"slices"
	"sort"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// Options select the endpoints of one cluster.
type Options struct {
	// PortName is the service port the cluster is for.
	PortName string
	// SubsetLabels select a subset (nil: all endpoints).
	SubsetLabels map[string]string
	// Network of the proxy ("": none).
	Network string
	// Gateways are the network gateways. When there is at least one, the
	// endpoints of another network than the proxy's are replaced by that
	// network's gateways (see network.go); without any, every endpoint is
	// sent whatever its network, as in Istio.
	Gateways *model.NetworkGateways
	// IPMode of the proxy: a single-stack proxy only gets gateways of its
	// family.
	IPMode model.IPMode
	// Sidecar is set for sidecars (and proxyless clients): they use only
	// gateways with an mTLS port.
	Sidecar bool
	// NetworkView, when set, are the networks whose endpoints the proxy
	// wants (its REQUESTED_NETWORK_VIEW); endpoints without a network are
	// always visible.
	NetworkView []string
}

// localityGroup is the endpoints of one locality: the model endpoints
// and, in the same order, what is sent.
type localityGroup struct {
	label string
	eps   []*model.IstioEndpoint
	lbs   []*endpointv3.LbEndpoint
}

// Build returns the load assignment of a cluster. A cluster without matching
// endpoints gets an assignment with its name only.
func Build(clusterName string, eps []*model.IstioEndpoint, o Options) *endpointv3.ClusterLoadAssignment {
	byLocality := map[string]*localityGroup{}
	for _, ep := range eps {
		if !selected(ep, o) {
			continue
		}
		g := byLocality[ep.Locality.Label]
		if g == nil {
			g = &localityGroup{label: ep.Locality.Label}
			byLocality[ep.Locality.Label] = g
		}
		g.eps = append(g.eps, ep)
		g.lbs = append(g.lbs, lbEndpoint(ep))
	}
	la := &endpointv3.ClusterLoadAssignment{ClusterName: clusterName}
	labels := make([]string, 0, len(byLocality))
	for l := range byLocality {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	multiNetwork := o.Gateways.IsMultiNetworkEnabled()
	for _, l := range labels {
		g := byLocality[l]
		if multiNetwork {
			g = byNetwork(g, o)
		}
		lle := &endpointv3.LocalityLbEndpoints{Locality: locality(l), LbEndpoints: g.lbs}
		if len(g.lbs) > 0 {
			// a locality whose endpoints all went to other networks keeps
			// its group, without weight, as Istio's
			var w uint32
			for _, lb := range g.lbs {
				w += lb.GetLoadBalancingWeight().GetValue()
			}
			lle.LoadBalancingWeight = wrapperspb.UInt32(w)
		}
		la.Endpoints = append(la.Endpoints, lle)
	}
	return la
}

func selected(ep *model.IstioEndpoint, o Options) bool {
	if o.PortName != "" && ep.ServicePortName != o.PortName {
		return false
	}
	if ep.HealthStatus != 0 && ep.HealthStatus != model.Healthy && !ep.SendUnhealthyEndpoints {
		return false
	}
	if ep.HealthStatus == model.Terminating {
		return false
	}
	for k, v := range o.SubsetLabels {
		if ep.Labels[k] != v {
			return false
		}
	}
	if len(o.NetworkView) > 0 && ep.Network != "" && !slices.Contains(o.NetworkView, ep.Network) {
		return false
	}
	// an endpoint without an address may still be reached through a
	// gateway of its network
	return ep.FirstAddress() != "" || o.Gateways.IsMultiNetworkEnabled() && !inNetwork(o.Network, ep.Network)
}

// ParseLocality turns "region/zone/subzone" into an Envoy locality.
func ParseLocality(label string) *core.Locality { return locality(label) }

func locality(label string) *core.Locality {
	parts := strings.SplitN(label, "/", 3)
	l := &core.Locality{}
	if len(parts) > 0 {
		l.Region = parts[0]
	}
	if len(parts) > 1 {
		l.Zone = parts[1]
	}
	if len(parts) > 2 {
		l.SubZone = parts[2]
	}
	return l
}

func healthStatus(h model.HealthStatus) core.HealthStatus {
	switch h {
	case model.Healthy:
		return core.HealthStatus_HEALTHY
	case model.UnHealthy:
		return core.HealthStatus_UNHEALTHY
	case model.Draining:
		return core.HealthStatus_DRAINING
	}
	return core.HealthStatus_UNKNOWN
}

func lbEndpoint(ep *model.IstioEndpoint) *endpointv3.LbEndpoint {
	w := ep.LbWeight
	if w == 0 {
		w = 1
	}
	lb := &endpointv3.LbEndpoint{
		HostIdentifier:      &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: address(ep.FirstAddress(), ep.EndpointPort)}},
		HealthStatus:        healthStatus(ep.HealthStatus),
		LoadBalancingWeight: wrapperspb.UInt32(w),
		Metadata:            metadata(ep),
	}
	return lb
}

func address(addr string, port uint32) *core.Address {
	if p, ok := strings.CutPrefix(addr, "unix://"); ok {
		return &core.Address{Address: &core.Address_Pipe{Pipe: &core.Pipe{Path: p}}}
	}
	return &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
		Address: addr, PortSpecifier: &core.SocketAddress_PortValue{PortValue: port}}}}
}

// metadata carries the workload for telemetry
// (name;namespace;canonical service;canonical revision;cluster) and the TLS
// mode the cluster's transport socket matches on.
func metadata(ep *model.IstioEndpoint) *core.Metadata {
	app := firstOf(ep.Labels, "service.istio.io/canonical-name", "app.kubernetes.io/name", "app")
	if app == "" {
		app = ep.WorkloadName
	}
	rev := firstOf(ep.Labels, "service.istio.io/canonical-revision", "app.kubernetes.io/version", "version")
	if rev == "latest" {
		// the default revision is left out, as Istio's
		// AppendLbEndpointMetadata leaves it (injected pods carry it)
		rev = ""
	}
	workload := strings.Join([]string{ep.WorkloadName, ep.Namespace, app, rev, ep.Locality.ClusterID}, ";")
	md := &core.Metadata{FilterMetadata: map[string]*structpb.Struct{
		"istio": {Fields: map[string]*structpb.Value{"workload": structpb.NewStringValue(workload)}},
	}}
	if ep.TLSMode == model.IstioMutualTLSModeLabel {
		md.FilterMetadata["envoy.transport_socket_match"] = &structpb.Struct{Fields: map[string]*structpb.Value{
			"tlsMode": structpb.NewStringValue(model.IstioMutualTLSModeLabel)}}
	}
	return md
}

func firstOf(labels map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := labels[k]; v != "" {
			return v
		}
	}
	return ""
}

// KeepMTLS leaves in la only the endpoints that take Istio mTLS (tlsMode
// "istio" in their transport socket match metadata), as Istio filters the
// endpoints of SNI-DNAT clusters (EndpointsWithMTLSFilter): after grouping,
// so that a locality whose endpoints all go keeps its empty group, its
// weight recomputed (none when empty).
func KeepMTLS(la *endpointv3.ClusterLoadAssignment) {
	for _, g := range la.GetEndpoints() {
		kept := g.LbEndpoints[:0]
		var weight uint32
		for _, lb := range g.LbEndpoints {
			if lb.GetMetadata().GetFilterMetadata()["envoy.transport_socket_match"].GetFields()["tlsMode"].GetStringValue() != model.IstioMutualTLSModeLabel {
				continue
			}
			kept = append(kept, lb)
			weight += lb.GetLoadBalancingWeight().GetValue()
		}
		g.LbEndpoints = kept
		g.LoadBalancingWeight = nil
		if len(kept) > 0 {
			g.LoadBalancingWeight = wrapperspb.UInt32(weight)
		}
	}
}
