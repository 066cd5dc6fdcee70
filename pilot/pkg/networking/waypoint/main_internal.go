package waypoint

import (
	"net/netip"
	"slices"
	"strconv"

	xdscore "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcher "github.com/cncf/xds/go/xds/type/matcher/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsinspector "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	networkinput "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/network/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// Names of the chains of workload addressing.
const (
	DirectTCP  = "direct-tcp"
	DirectHTTP = "direct-http"
)

var (
	destinationIPInput = &xdscore.TypedExtensionConfig{Name: "ip",
		TypedConfig: protoconv.MessageToAny(&networkinput.DestinationIPInput{})}
	destinationPortInput = &xdscore.TypedExtensionConfig{Name: "port",
		TypedConfig: protoconv.MessageToAny(&networkinput.DestinationPortInput{})}
	appProtocolInput = &xdscore.TypedExtensionConfig{Name: "application-protocol",
		TypedConfig: protoconv.MessageToAny(&networkinput.ApplicationProtocolInput{})}
	tlsInspectorConfig = protoconv.Constant(func() proto.Message { return &tlsinspector.TlsInspector{} })
)

// toChain is a match action selecting the named filter chain.
func toChain(name string) *xdsmatcher.Matcher_OnMatch {
	return &xdsmatcher.Matcher_OnMatch{OnMatch: &xdsmatcher.Matcher_OnMatch_Action{Action: &xdscore.TypedExtensionConfig{
		Name: name, TypedConfig: protoconv.MessageToAny(wrapperspb.String(name))}}}
}

func toMatcher(m *xdsmatcher.Matcher) *xdsmatcher.Matcher_OnMatch {
	return &xdsmatcher.Matcher_OnMatch{OnMatch: &xdsmatcher.Matcher_OnMatch_Matcher{Matcher: m}}
}

func exactMap(input *xdscore.TypedExtensionConfig, m map[string]*xdsmatcher.Matcher_OnMatch) *xdsmatcher.Matcher {
	return &xdsmatcher.Matcher{MatcherType: &xdsmatcher.Matcher_MatcherTree_{MatcherTree: &xdsmatcher.Matcher_MatcherTree{
		Input: input, TreeType: &xdsmatcher.Matcher_MatcherTree_ExactMatchMap{ExactMatchMap: &xdsmatcher.Matcher_MatcherTree_MatchMap{Map: m}}}}}
}

// sniffed sends HTTP/1.1 and h2c to the HTTP chain, the rest to the TCP one.
func sniffed(tcp, http string) *xdsmatcher.Matcher {
	m := exactMap(appProtocolInput, map[string]*xdsmatcher.Matcher_OnMatch{"'h2c'": toChain(http), "'http/1.1'": toChain(http)})
	m.OnNoMatch = toChain(tcp)
	return m
}

func cidr(a netip.Addr) *xdscore.CidrRange {
	return &xdscore.CidrRange{AddressPrefix: a.String(), PrefixLen: wrapperspb.UInt32(uint32(a.BitLen()))}
}

// mainInternalListener dispatches each decapsulated connection on its
// original destination: a service VIP and port selects that port's chain
// (HTTP, TCP, or sniffed between both); a workload's address the direct
// chains.
func mainInternalListener(svcs []Service, o Options) *listenerv3.Listener {
	ipm := &xdsmatcher.IPMatcher{}
	var chains []*listenerv3.FilterChain
	portProtocols := map[int]protocol.Instance{}
	tlsPorts, plainPorts := map[int]bool{}, map[int]bool{}
	for _, s := range svcs {
		svc := s.Service
		ports := map[string]*xdsmatcher.Matcher_OnMatch{}
		for _, p := range svc.Ports {
			if p.Protocol == protocol.UDP {
				continue
			}
			if p.Protocol.IsTLS() {
				tlsPorts[p.Port] = true
			} else {
				plainPorts[p.Port] = true
			}
			key := strconv.Itoa(p.Port)
			tcpName, httpName := ClusterName("tcp", svc.Hostname, p.Port), ClusterName("http", svc.Hostname, p.Port)
			switch {
			case p.Protocol.IsUnsupported():
				chains = append(chains, tcpChain(s, p, o), httpChain(s, p, o))
				ports[key] = toMatcher(sniffed(tcpName, httpName))
				portProtocols[p.Port] = protocol.Unsupported
			case p.Protocol.IsHTTP():
				chains = append(chains, httpChain(s, p, o))
				ports[key] = toChain(httpName)
				if prev, ok := portProtocols[p.Port]; ok && prev != protocol.HTTP {
					portProtocols[p.Port] = protocol.Unsupported
				} else {
					portProtocols[p.Port] = protocol.HTTP
				}
			default:
				chains = append(chains, tcpChain(s, p, o))
				ports[key] = toChain(tcpName)
				if prev, ok := portProtocols[p.Port]; ok && !prev.IsTCP() {
					portProtocols[p.Port] = protocol.Unsupported
				} else {
					portProtocols[p.Port] = p.Protocol
				}
			}
		}
		vips := serviceVIPs(s.VIPs)
		if len(ports) == 0 || len(vips) == 0 {
			continue
		}
		rm := &xdsmatcher.IPMatcher_IPRangeMatcher{OnMatch: toMatcher(exactMap(destinationPortInput, ports))}
		for _, v := range vips {
			rm.Ranges = append(rm.Ranges, cidr(v))
		}
		ipm.RangeMatchers = append(ipm.RangeMatchers, rm)
	}
	chains = append(chains, directTCPChain(o), directHTTPChain(o))
	if len(o.Workloads) > 0 {
		rm := &xdsmatcher.IPMatcher_IPRangeMatcher{OnMatch: toMatcher(sniffed(DirectTCP, DirectHTTP))}
		for _, a := range o.Workloads {
			rm.Ranges = append(rm.Ranges, cidr(a))
		}
		ipm.RangeMatchers = append(ipm.RangeMatchers, rm)
	}
	l := &listenerv3.Listener{
		Name:              MainInternal,
		AccessLog:         telemetry.NoRoute(o.AccessLogs),
		ListenerSpecifier: &listenerv3.Listener_InternalListener{InternalListener: &listenerv3.Listener_InternalListenerConfig{}},
		ListenerFilters:   []*listenerv3.ListenerFilter{listenerFilter(origDstName, origDstConfig()), httpInspector(portProtocols, len(o.Workloads) > 0)},
		TrafficDirection:  core.TrafficDirection_INBOUND,
		FilterChains:      chains,
		FilterChainMatcher: &xdsmatcher.Matcher{MatcherType: &xdsmatcher.Matcher_MatcherTree_{MatcherTree: &xdsmatcher.Matcher_MatcherTree{
			Input: destinationIPInput,
			TreeType: &xdsmatcher.Matcher_MatcherTree_CustomMatch{CustomMatch: &xdscore.TypedExtensionConfig{
				Name: "ip", TypedConfig: protoconv.MessageToAny(ipm)}},
		}}},
	}
	if len(tlsPorts) > 0 {
		tls := listenerFilter("envoy.filters.listener.tls_inspector", tlsInspectorConfig())
		var skip []int
		for p := range plainPorts {
			if !tlsPorts[p] {
				skip = append(skip, p)
			}
		}
		if len(skip) > 0 {
			slices.Sort(skip)
			tls.FilterDisabled = excludePorts(skip)
		}
		l.ListenerFilters = append(l.ListenerFilters, tls)
	}
	return l
}

// serviceVIPs are a service's addresses that are IPs, sorted and unique.
func serviceVIPs(addrs []string) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil || ip.IsUnspecified() {
			continue
		}
		out = append(out, ip)
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return slices.Compact(out)
}

// httpInspector sniffs HTTP except on ports every service declares as
// HTTP only or TCP only; workloads may be reached on any port, so with
// workloads it sniffs everywhere.
func httpInspector(portProtocols map[int]protocol.Instance, workloads bool) *listenerv3.ListenerFilter {
	f := listenerFilter("envoy.filters.listener.http_inspector", inspectorConfig())
	if workloads {
		return f
	}
	var skip []int
	for p, proto := range portProtocols {
		if !proto.IsUnsupported() {
			skip = append(skip, p)
		}
	}
	if len(skip) > 0 {
		slices.Sort(skip)
		f.FilterDisabled = excludePorts(skip)
	}
	return f
}

// excludePorts is a predicate matching the given destination ports.
func excludePorts(ports []int) *listenerv3.ListenerFilterChainMatchPredicate {
	rules := make([]*listenerv3.ListenerFilterChainMatchPredicate, 0, len(ports))
	for _, p := range ports {
		rules = append(rules, &listenerv3.ListenerFilterChainMatchPredicate{Rule: &listenerv3.ListenerFilterChainMatchPredicate_DestinationPortRange{
			DestinationPortRange: &typev3.Int32Range{Start: int32(p), End: int32(p + 1)}}})
	}
	if len(rules) == 1 {
		return rules[0]
	}
	return &listenerv3.ListenerFilterChainMatchPredicate{Rule: &listenerv3.ListenerFilterChainMatchPredicate_OrMatch{
		OrMatch: &listenerv3.ListenerFilterChainMatchPredicate_MatchSet{Rules: rules}}}
}
