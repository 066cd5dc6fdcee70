package waypoint

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pkg/config"
)

// ruleSpec is a rule's spec (nil for no rule).
func ruleSpec(dr *config.Config) *networking.DestinationRule {
	if dr == nil {
		return nil
	}
	spec, _ := dr.Spec.(*networking.DestinationRule)
	return spec
}

// ruleSubsets are the subset names of a DestinationRule ("" first: the
// service's own cluster).
func ruleSubsets(dr *config.Config) []string {
	out := []string{""}
	for _, ss := range ruleSpec(dr).GetSubsets() {
		out = append(out, ss.GetName())
	}
	return out
}

// SubsetLabels are the labels a DestinationRule's subset selects (nil when
// the rule has no such subset); "" selects everything.
func SubsetLabels(dr *config.Config, subset string) (map[string]string, bool) {
	if subset == "" {
		return map[string]string{}, true
	}
	for _, ss := range ruleSpec(dr).GetSubsets() {
		if ss.GetName() == subset {
			if ss.GetLabels() == nil {
				return map[string]string{}, true
			}
			return ss.GetLabels(), true
		}
	}
	return nil, false
}

// applyDestinationRule shapes an inbound-vip cluster (side "http" or
// "tcp") by the traffic policy the rule gives the port (and subset): connect timeout and circuit
// breakers, load balancer, outlier detection, and for HTTP clusters the
// connection pool's HTTP options, as the outbound cluster of the same
// policy has them; the rule is named in the cluster's metadata.
// TLS origination is not applied (see the package doc).
func applyDestinationRule(c *clusterv3.Cluster, svc *model.Service, p *model.Port, side, subset string, dr *config.Config, o Options) {
	if dr == nil {
		return
	}
	out := outboundTwin(svc, p, subset, dr, nil, cluster.EndpointView{}, o)
	if out == nil {
		return
	}
	c.ConnectTimeout = out.ConnectTimeout
	c.CircuitBreakers = out.CircuitBreakers
	c.LbPolicy = out.LbPolicy
	c.LbConfig = out.LbConfig
	c.OutlierDetection = out.OutlierDetection
	c.UpstreamConnectionOptions = out.UpstreamConnectionOptions
	if out.CommonLbConfig != nil {
		c.CommonLbConfig = out.CommonLbConfig
	}
	spec := ruleSpec(dr)
	pooled := spec.GetTrafficPolicy().GetConnectionPool() != nil || hasSubsetPool(spec, subset)
	if opts, ok := out.TypedExtensionProtocolOptions[httpOptionsKey]; ok && pooled && side == "http" && p.Protocol.IsHTTP() {
		if c.TypedExtensionProtocolOptions == nil {
			c.TypedExtensionProtocolOptions = map[string]*anypb.Any{}
		}
		c.TypedExtensionProtocolOptions[httpOptionsKey] = opts
	}
	// unlike an outbound cluster, an inbound-vip one names no
	// DestinationRule in its metadata (Istio's does not either)
}

func hasSubsetPool(spec *networking.DestinationRule, subset string) bool {
	for _, ss := range spec.GetSubsets() {
		if ss.GetName() == subset && ss.GetTrafficPolicy().GetConnectionPool() != nil {
			return true
		}
	}
	return false
}

// outboundTwin is the outbound cluster of the same service port, subset
// and rule (nil when there is none); eps are the endpoints of DNS
// services (nil: the service is built as client-side load-balanced).
func outboundTwin(svc *model.Service, p *model.Port, subset string, dr *config.Config, eps []*model.IstioEndpoint,
	view cluster.EndpointView, o Options,
) *clusterv3.Cluster {
	one := svc.ShallowCopy()
	one.Ports = model.PortList{p}
	opts := cluster.Options{Mesh: o.Mesh, DestinationRule: dr}
	if eps == nil {
		one.Resolution = model.ClientSideLB
	} else {
		// the inline endpoints as the waypoint sees them: through the
		// gateways of their network, as a proxy that is not a sidecar
		opts.View, opts.IPMode, opts.Router = view, o.IPMode, true
		opts.Endpoints = func(port *model.Port) []*model.IstioEndpoint {
			var out []*model.IstioEndpoint
			for _, ep := range eps {
				if ep.ServicePortName == port.Name {
					out = append(out, ep)
				}
			}
			return out
		}
	}
	want := cluster.SubsetKey(cluster.Outbound, subset, svc.Hostname, p.Port)
	for _, oc := range cluster.BuildOutbound(one, opts) {
		if oc.GetName() == want {
			return oc
		}
	}
	return nil
}

// isDNS tells services whose endpoints the proxy resolves itself.
func isDNS(svc *model.Service) bool {
	return svc.Resolution == model.DNSLB || svc.Resolution == model.DNSRoundRobinLB
}

// applyDNS makes the inbound-vip cluster of a DNS service resolve its
// endpoints itself, as the outbound cluster of the service does (STRICT_DNS
// or LOGICAL_DNS, inline endpoints, DNS settings): such endpoints take no
// HBONE, so they are reached directly.
func applyDNS(c *clusterv3.Cluster, s Service, p *model.Port, subset string, o Options) {
	out := outboundTwin(s.Service, p, subset, s.DestinationRule, append([]*model.IstioEndpoint{}, s.Endpoints...), s.EndpointView, o)
	if out == nil {
		return
	}
	c.ClusterDiscoveryType = out.ClusterDiscoveryType
	c.EdsClusterConfig = nil
	c.LoadAssignment = proto.CloneOf(out.LoadAssignment)
	if c.LoadAssignment != nil {
		c.LoadAssignment.ClusterName = c.Name
	}
	c.DnsRefreshRate, c.RespectDnsTtl, c.DnsLookupFamily = out.DnsRefreshRate, out.RespectDnsTtl, out.DnsLookupFamily
	c.DnsJitter, c.TypedDnsResolverConfig = out.DnsJitter, out.TypedDnsResolverConfig
}
