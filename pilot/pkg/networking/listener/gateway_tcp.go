package listener

import (
	"strconv"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/gateway"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// istioMTLSALPNs are the ALPNs of Istio's mTLS, which AUTO_PASSTHROUGH
// chains require (so that only mesh clients get through).
var istioMTLSALPNs = []string{"istio", "istio-peer-exchange", "istio-http/1.0", "istio-http/1.1", "istio-h2"}

// tcpServerChains are the chains of a server that is not HTTP: TCP routes
// of its VirtualServices (plain, or after terminating TLS), or SNI
// passthrough by TLS routes, or AUTO_PASSTHROUGH to any mesh service its
// hosts cover.
func (o GatewayOptions) tcpServerChains(s *networking.Server, listenPort uint32, tlsHosts map[uint32]map[string]string) []gatewayChain {
	gw := o.Merged.GatewayOf[s]
	switch {
	case s.Tls == nil:
		if fs := o.tcpRouteFilters(s, gw); len(fs) > 0 {
			return []gatewayChain{{filters: fs}}
		}
	case !gateway.IsPassthrough(s):
		if fs := o.tcpRouteFilters(s, gw); len(fs) > 0 {
			var sni []string
			if info := o.Merged.TLS[s]; info != nil {
				sni = info.SNIHosts
			}
			return []gatewayChain{{sni: sni, tls: o.serverTLS(s), filters: fs}}
		}
	case s.Tls.Mode == networking.ServerTLSSettings_AUTO_PASSTHROUGH:
		var sni []string
		if info := o.Merged.TLS[s]; info != nil {
			sni = info.SNIHosts
		}
		return o.autoPassthroughChains(sni)
	default:
		return o.tlsRouteChains(s, gw, listenPort, tlsHosts)
	}
	o.problem("gateway " + gw + ": server " + s.GetPort().GetName() + " (port " + strconv.Itoa(int(s.Port.Number)) +
		") has no chain: no VirtualService bound to the gateway has a TCP route for it")
	return nil
}

// boundVirtualServices are the VirtualServices of the gateway whose hosts
// a server host covers.
func (o GatewayOptions) boundVirtualServices(s *networking.Server, gw string) []config.Config {
	if o.VirtualServices == nil {
		return nil
	}
	var out []config.Config
	for _, vs := range o.VirtualServices(gw) {
		if serverCoversVS(s.Hosts, &vs) {
			out = append(out, vs)
		}
	}
	return out
}

// serverCoversVS tells whether a server host (namespace-scoped hosts only
// for VirtualServices of that namespace) matches a host of the
// VirtualService.
func serverCoversVS(serverHosts []string, vs *config.Config) bool {
	spec, ok := vs.Spec.(*networking.VirtualService)
	if !ok {
		return false
	}
	for _, vh := range spec.Hosts {
		for _, sh := range serverHosts {
			if ns, name, scoped := strings.Cut(sh, "/"); scoped {
				if ns != vs.Namespace {
					continue
				}
				sh = name
			}
			if model.HostMatches(sh, vh) {
				return true
			}
		}
	}
	return false
}

// tcpRouteFilters are the filters of the first TCP route that matches the
// server, among its VirtualServices in order.
func (o GatewayOptions) tcpRouteFilters(s *networking.Server, gw string) []*listenerv3.Filter {
	mx := s.GetTls().GetMode() == networking.ServerTLSSettings_ISTIO_MUTUAL
	for _, vs := range o.boundVirtualServices(s, gw) {
		spec := vs.Spec.(*networking.VirtualService)
		for _, r := range spec.Tcp {
			if l4Matches(r.Match, s, gw) && len(r.Route) > 0 {
				return o.routeFilters(r.Route, s, &vs, mx)
			}
		}
		// TLSRoutes translated from the Gateway API use TLS blocks, also
		// when the gateway terminates TLS
		if strings.HasPrefix(vs.Annotations["internal.istio.io/parents"], "TLSRoute/") && !gateway.IsPassthrough(s) {
			for _, r := range spec.Tls {
				for _, m := range r.Match {
					if l4Single(tlsToL4(m), s, gw) {
						return o.routeFilters(r.Route, s, &vs, mx)
					}
				}
			}
		}
	}
	return nil
}

// tlsRouteChains are the SNI chains of a PASSTHROUGH server: one per TLS
// route match; an SNI host another chain of the port already has (on the
// same bind) drops that match.
func (o GatewayOptions) tlsRouteChains(s *networking.Server, gw string, listenPort uint32, tlsHosts map[uint32]map[string]string) []gatewayChain {
	var out []gatewayChain
	for _, vs := range o.boundVirtualServices(s, gw) {
		spec := vs.Spec.(*networking.VirtualService)
		for _, r := range spec.Tls {
			if len(r.Route) == 0 {
				continue
			}
			for i, m := range r.Match {
				if !l4Single(tlsToL4(m), s, gw) {
					continue
				}
				if tlsHosts[listenPort] == nil {
					tlsHosts[listenPort] = map[string]string{}
				}
				if dup := gateway.TakeHosts(m.SniHosts, s.Bind, tlsHosts[listenPort]); len(dup) > 0 {
					o.problem("VirtualService " + vs.Namespace + "/" + vs.Name + " TLS route " + strconv.Itoa(i) +
						" skipped on port " + strconv.Itoa(int(listenPort)) + " of gateway " + gw + ": SNI hosts " +
						strings.Join(dup, ", ") + " are already routed")
					continue
				}
				out = append(out, gatewayChain{sni: m.SniHosts, filters: o.routeFilters(r.Route, s, &vs, false)})
			}
		}
	}
	return out
}

// autoPassthroughChains route by SNI to any mesh service (and subset) the
// hosts cover: the SNI is the cluster name, and the ALPN must be Istio's
// mTLS, so only mesh clients get through. No policy filters apply.
func (o GatewayOptions) autoPassthroughChains(hosts []string) []gatewayChain {
	var out []gatewayChain
	for _, svc := range o.Services {
		if svc.MeshExternal {
			continue
		}
		covered := false
		for _, h := range hosts {
			if model.HostSubsetOf(svc.Hostname, h) {
				covered = true
				break
			}
		}
		if !covered {
			continue
		}
		dr := o.TCP.rule(svc.Hostname)
		for _, p := range svc.Ports {
			if p.Protocol == protocol.UDP {
				continue
			}
			out = append(out, gatewayChain{sni: []string{cluster.SNI("", svc.Hostname, p.Port)}, alpn: istioMTLSALPNs,
				filters: o.autoPassthroughFilters(svc, p, "", dr)})
			for _, s := range dr.GetSubsets() {
				out = append(out, gatewayChain{sni: []string{cluster.SNI(s.GetName(), svc.Hostname, p.Port)}, alpn: istioMTLSALPNs,
					filters: o.autoPassthroughFilters(svc, p, s.GetName(), dr)})
			}
		}
	}
	return out
}

// autoPassthroughFilters are the filters of an AUTO_PASSTHROUGH chain to a
// service port's (subset's) SNI cluster, as Istio builds a sidecar's chain
// to one destination, without its tunnel: the rule's TCP proxy timeouts
// (the idle one falling back to the proxy's IDLE_TIMEOUT) and source-IP
// hashing, the mesh's outboundClusterStatName, and the filters of the
// service port's protocol (mongo_proxy on a Mongo port, and so on).
func (o GatewayOptions) autoPassthroughFilters(svc *model.Service, p *model.Port, subset string, dr *networking.DestinationRule) []*listenerv3.Filter {
	c := &egressChain{cluster: cluster.SNI(subset, svc.Hostname, p.Port), stack: p.Protocol, hashSourceIP: useSourceIP(dr, subset)}
	c.idle, c.maxDuration = o.tcpTimeouts(dr)
	if o.TCP.StatName != "" {
		c.statPrefix = statPrefix(o.TCP.StatName, svc.Hostname, subset, p.Port, p.Name, svc)
	}
	return tcpChainFilters(c, o.Options)
}

// routeFilters are the network filters of a TCP or TLS route, built as a
// sidecar's outbound TCP chain to the route is (routeChain: one
// destination, or weighted clusters named after the VirtualService; the
// DestinationRule of the first destination's service for timeouts,
// hashing and tunnel), for the server's port and protocol (Mongo, Redis
// and MySQL servers get their protocol's filters), after the metadata
// exchange (ISTIO_MUTUAL servers) and the gateway's authorization filters,
// as Istio's shared buildOutboundNetworkFilters does.
func (o GatewayOptions) routeFilters(routes []*networking.RouteDestination, s *networking.Server, vs *config.Config, mx bool) []*listenerv3.Filter {
	// the server's port, as the listener port of a sidecar's chain
	at := egressAdd{port: int(s.Port.Number), proto: protocol.Parse(s.Port.Protocol), portName: s.Port.Name}
	c := at.routeChain(vs, routes, o.Options, nil, false)
	var out []*listenerv3.Filter
	if mx {
		out = append(out, metadataExchange())
	}
	out = append(out, o.InboundTCPPolicy...)
	return append(out, tcpChainFilters(c, o.Options)...)
}

func tlsToL4(m *networking.TLSMatchAttributes) *networking.L4MatchAttributes {
	return &networking.L4MatchAttributes{DestinationSubnets: m.DestinationSubnets, Port: m.Port,
		SourceLabels: m.SourceLabels, Gateways: m.Gateways, SourceNamespace: m.SourceNamespace}
}

// l4Matches: any match (or none at all) that fits the server's port and
// gateway.
func l4Matches(ms []*networking.L4MatchAttributes, s *networking.Server, gw string) bool {
	for _, m := range ms {
		if l4Single(m, s, gw) {
			return true
		}
	}
	return len(ms) == 0
}

func l4Single(m *networking.L4MatchAttributes, s *networking.Server, gw string) bool {
	if m.Port != 0 && m.Port != s.Port.Number {
		return false
	}
	if len(m.Gateways) == 0 {
		return true
	}
	for _, g := range m.Gateways {
		if g == gw {
			return true
		}
	}
	return false
}
