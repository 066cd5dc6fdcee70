package listener

import (
	"slices"
	"strconv"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	hashpolicy "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pkg/config"
)

// TCPRouting is what outbound TCP chains need of the proxy to apply the tcp
// routes of VirtualServices and the source-IP hashing of DestinationRules.
// The zero value applies neither: every TCP port goes to its own cluster.
type TCPRouting struct {
	// Labels and Namespace are the proxy's, checked against the
	// sourceLabels and sourceNamespace of tcp matches.
	Labels    map[string]string
	Namespace string
	// LookupService resolves a route destination's host to the service
	// the proxy sees (nil func or result: none).
	LookupService func(host string) *model.Service
	// DestinationRule is the rule the proxy uses for a host (nil func or
	// result: none).
	DestinationRule func(host string) *networking.DestinationRule
	// StatName is the mesh's outboundClusterStatName: the pattern of the
	// stat prefix of chains to one cluster ("": the cluster's name).
	StatName string
	// Protocols are the Mongo, Redis and MySQL filter switches (zero:
	// Istio's defaults).
	Protocols ProtocolFilters
}

func (t TCPRouting) service(host string) *model.Service {
	if t.LookupService == nil {
		return nil
	}
	return t.LookupService(host)
}

func (t TCPRouting) rule(host string) *networking.DestinationRule {
	if t.DestinationRule == nil {
		return nil
	}
	return t.DestinationRule(host)
}

// tcpChains are the TCP chains of one service port, in Istio's order: for
// each VirtualService bound to the host (first first), each tcp route with
// destinations either applies unconditionally (no match, or a match that
// applies here without destinationSubnets) and ends the list, or adds a
// chain for the subnets of its applying matches. Without such a terminal
// route, the port's own cluster takes the rest.
func (a egressAdd) tcpChains(o Options) []*egressChain {
	out, terminal := a.routedChains(o)
	if !terminal {
		out = append(out, a.defaultTCPChain(o))
	}
	return out
}

// routedChains are the chains of the port's tcp routes, and whether one of
// them leaves nothing to the port's own cluster.
func (a egressAdd) routedChains(o Options) (out []*egressChain, terminal bool) {
	for _, vs := range hostVirtualServices(a.vss, a.svc.Hostname) {
		for _, tr := range vs.Spec.(*networking.VirtualService).GetTcp() {
			if len(tr.GetRoute()) == 0 {
				continue // admission rejects it, but a store may still hold one
			}
			if len(tr.GetMatch()) == 0 {
				return append(out, a.routeChain(vs, tr.GetRoute(), o, a.cidr, true)), true
			}
			var subnets []string
			for _, m := range tr.GetMatch() {
				if !tcpMatchApplies(m, o.TCP, a.port) {
					continue
				}
				if len(m.GetDestinationSubnets()) == 0 || a.port == 0 {
					return append(out, a.routeChain(vs, tr.GetRoute(), o, a.cidr, true)), true
				}
				subnets = append(subnets, m.GetDestinationSubnets()...)
			}
			if len(subnets) == 0 {
				continue
			}
			// Istio names no VirtualService on subnet chains
			out = append(out, a.routeChain(vs, tr.GetRoute(), o, subnets, false))
			// a subnet chain matching exactly the service's own CIDRs takes
			// the place of its default chain (Envoy rejects two chains with
			// one match); later routes still add theirs
			if len(a.cidr) > 0 && slices.Equal(slices.Sorted(slices.Values(subnets)), slices.Sorted(slices.Values(a.cidr))) {
				terminal = true
			}
		}
	}
	return out, terminal
}

// defaultTCPChain goes to the service's only port when it has one (a
// Sidecar port that is not the service's, a socket), else to the listener's
// port, as Istio picks the cluster (a TLS port's server names:
// outbound_tls_routes.go fallbackSNI).
func (a egressAdd) defaultTCPChain(o Options) *egressChain {
	cp := a.port
	if len(a.svc.Ports) == 1 {
		cp = a.svc.Ports[0].Port
	}
	dr := o.TCP.rule(a.svc.Hostname)
	tc := &egressChain{cluster: cluster.SubsetKey(cluster.Outbound, "", a.svc.Hostname, cp), cidr: a.cidr,
		hashSourceIP: useSourceIP(dr, ""), stack: a.proto, tunnel: tunnelConfig(dr, "")}
	tc.idle, tc.maxDuration = o.tcpTimeouts(dr)
	if cluster.IsDynamicDNS(a.svc) {
		tc.dynamicDNS, tc.dynamicDNSPort = a.svc.Hostname, a.port
	}
	if o.TCP.StatName != "" {
		// Istio knows only the number of the port here
		tc.statPrefix = statPrefix(o.TCP.StatName, a.svc.Hostname, "", cp, "", a.svc)
	}
	return tc
}

// routeChain is the chain of one tcp route: one destination goes to its
// cluster, several to weighted clusters named after the VirtualService;
// the DestinationRule of the first destination's service decides the
// hash policy, as in Istio.
func (a egressAdd) routeChain(vs *config.Config, routes []*networking.RouteDestination, o Options, cidr []string, named bool) *egressChain {
	first := routes[0].GetDestination()
	svc := o.TCP.service(first.GetHost())
	var dr *networking.DestinationRule
	if svc != nil {
		dr = o.TCP.rule(svc.Hostname)
	}
	c := &egressChain{cidr: cidr, stack: a.proto}
	c.idle, c.maxDuration = o.tcpTimeouts(dr)
	if named {
		c.config = virtualServicePath(vs)
	}
	if len(routes) == 1 {
		c.cluster = destinationCluster(first, svc, a.port)
		c.hashSourceIP = useSourceIP(dr, first.GetSubset())
		c.tunnel = tunnelConfig(dr, first.GetSubset())
		if o.TCP.StatName != "" && svc != nil {
			// the listener's port, not the destination's, as in Istio
			c.statPrefix = statPrefix(o.TCP.StatName, first.GetHost(), first.GetSubset(), a.port, a.portName, svc)
		}
		return c
	}
	c.statPrefix = vs.Name + "." + vs.Namespace
	for _, r := range routes {
		if r.GetWeight() <= 0 {
			continue
		}
		name := destinationCluster(r.GetDestination(), o.TCP.service(r.GetDestination().GetHost()), a.port)
		c.weighted = append(c.weighted, &tcpproxy.TcpProxy_WeightedCluster_ClusterWeight{Name: name, Weight: uint32(r.GetWeight())})
	}
	if len(c.weighted) == 0 {
		// validation requires a positive weight; Istio would fail on this
		// route, here it goes to its first destination
		c.cluster, c.statPrefix = destinationCluster(first, svc, a.port), ""
	}
	c.hashSourceIP = useSourceIP(dr, "")
	// the tunnel is set on the listener, not on a cluster: weighted
	// clusters take the rule's own, whatever their subsets, as in Istio
	c.tunnel = tunnelConfig(dr, "")
	return c
}

// destinationCluster names a destination's cluster as Istio does: an
// ExternalName alias points at its target, the port is the destination's,
// else the service's only one, else the listener's.
func destinationCluster(d *networking.Destination, svc *model.Service, port int) string {
	if d.GetHost() == "" {
		return "UnknownService"
	}
	h := d.GetHost()
	if svc != nil && svc.Attributes.K8sAttributes.ExternalName != "" {
		h = svc.Attributes.K8sAttributes.ExternalName
	}
	return cluster.SubsetKey(cluster.Outbound, d.GetSubset(), h, route.DestinationPort(d, svc, port))
}

// useSourceIP tells whether a rule hashes connections by source IP for a
// subset ("": none): the subset's load balancer, when it sets one, decides
// (any other policy turns it off), else the rule's.
func useSourceIP(dr *networking.DestinationRule, subset string) bool {
	if dr == nil {
		return false
	}
	on := dr.GetTrafficPolicy().GetLoadBalancer().GetConsistentHash().GetUseSourceIp()
	for _, s := range dr.GetSubsets() {
		if s.GetName() != subset {
			continue
		}
		if lb := s.GetTrafficPolicy().GetLoadBalancer(); lb != nil {
			on = lb.GetConsistentHash().GetUseSourceIp()
		}
		break
	}
	return on
}

// statPrefix fills in the mesh's outboundClusterStatName pattern as
// Istio does: a Kubernetes service's short name is <name>.<namespace>, any
// other's its host; the target port is always 0 on outbound chains.
func statPrefix(pattern, host, subset string, port int, portName string, svc *model.Service) string {
	short, name := host, host
	if svc.Attributes.ServiceRegistry == model.Kubernetes {
		short, name = svc.Attributes.Name+"."+svc.Attributes.Namespace, svc.Attributes.Name
	}
	// one pattern after the other, in Istio's order
	for _, r := range [][2]string{{"%SERVICE%", short}, {"%SERVICE_NAME%", name}, {"%SERVICE_FQDN%", host},
		{"%SUBSET_NAME%", subset}, {"%TARGET_PORT%", "0"}, {"%SERVICE_PORT%", strconv.Itoa(port)}, {"%SERVICE_PORT_NAME%", portName}} {
		pattern = strings.ReplaceAll(pattern, r[0], r[1])
	}
	return pattern
}

// sourceIPHash is the tcp_proxy hash policy of source-IP hashing.
func sourceIPHash() []*hashpolicy.HashPolicy {
	return []*hashpolicy.HashPolicy{{PolicySpecifier: &hashpolicy.HashPolicy_SourceIp_{SourceIp: &hashpolicy.HashPolicy_SourceIp{}}}}
}

// tcpMatchApplies checks what a sidecar knows statically of a connection
// against a tcp match: the port, the proxy's labels and namespace, and the
// mesh gateway.
func tcpMatchApplies(m *networking.L4MatchAttributes, t TCPRouting, port int) bool {
	if m == nil {
		return true
	}
	return t.staticMatch(m.GetGateways(), m.GetSourceLabels(), m.GetPort(), m.GetSourceNamespace(), port)
}

// staticMatch checks the predicates of a tcp or tls match that hold for
// every connection of the proxy on the port: the gateways (the mesh's),
// sourceLabels, port and sourceNamespace.
func (t TCPRouting) staticMatch(gateways []string, labels map[string]string, matchPort uint32, namespace string, port int) bool {
	if len(gateways) > 0 && !slices.Contains(gateways, "mesh") {
		return false
	}
	for k, v := range labels {
		if got, ok := t.Labels[k]; !ok || got != v {
			return false
		}
	}
	if matchPort != 0 && matchPort != uint32(port) {
		return false
	}
	return namespace == "" || namespace == t.Namespace
}

// withTCPRoutesOnly keeps, in o and a copy of its egress listeners, only
// the VirtualServices with tcp or tls routes: the others never change a
// TCP chain, and most meshes have many HTTP VirtualServices and few TCP
// ones, so each TCP port then scans only those.
func (o Options) withTCPRoutesOnly() Options {
	keep := func(vss []*config.Config) []*config.Config {
		var out []*config.Config
		for _, vs := range vss {
			if spec, ok := vs.Spec.(*networking.VirtualService); ok && model.HasL4Routes(spec) {
				out = append(out, vs)
			}
		}
		return out
	}
	o.VirtualServices = keep(o.VirtualServices)
	if o.Egress != nil {
		egress := make([]EgressListener, len(o.Egress))
		for i, e := range o.Egress {
			e.VirtualServices = keep(e.VirtualServices)
			egress[i] = e
		}
		o.Egress = egress
	}
	return o
}

// hostVirtualServices are those of vss with a host that overlaps hostname,
// in order, whatever their namespace (as Istio selects them for TCP).
func hostVirtualServices(vss []*config.Config, hostname string) []*config.Config {
	var out []*config.Config
	for _, vs := range vss {
		spec, ok := vs.Spec.(*networking.VirtualService)
		if !ok || !model.HasL4Routes(spec) {
			// only tcp and tls routes matter here; skipping the rest
			// changes no order
			continue
		}
		if slices.ContainsFunc(spec.GetHosts(), func(h string) bool { return hostsOverlap(h, hostname) }) {
			out = append(out, vs)
		}
	}
	return out
}

// hostsOverlap: some name matches both hosts ("*" and "*.x" are wildcards).
func hostsOverlap(a, b string) bool {
	sub := func(a, b string) bool { // every name of a is a name of b
		switch {
		case !strings.HasPrefix(b, "*"):
			return a == b
		case !strings.HasPrefix(a, "*"):
			return strings.HasSuffix(a, b[1:])
		default:
			return strings.HasSuffix(a[1:], b[1:])
		}
	}
	return sub(a, b) || sub(b, a)
}

// virtualServicePath is how chain metadata names a VirtualService.
func virtualServicePath(vs *config.Config) string {
	return "/apis/" + vs.GroupVersionKind.GroupVersion() + "/namespaces/" + vs.Namespace + "/virtual-service/" + vs.Name
}
