package listener

import (
	"sort"
	"strconv"
	"strings"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	httpinspector "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/http_inspector/v3"
	origdst "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	tlsinspector "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/protoconv"
)

// connectTimeout bounds the transport handshake of outbound chains.
var connectTimeout = durationpb.New(15 * time.Second)

func outboundListener(name, ip string, port int) *listenerv3.Listener {
	l := &listenerv3.Listener{
		Name:             name,
		Address:          address(ip, port),
		TrafficDirection: core.TrafficDirection_OUTBOUND,
		BindToPort:       wrapperspb.Bool(false),
	}
	sniffing(l)
	return l
}

// passthroughChain takes what no chain of an outbound listener matches, like
// any unknown destination.
func passthroughChain(o Options) *listenerv3.FilterChain {
	return &listenerv3.FilterChain{
		Name:             "PassthroughFilterChain",
		FilterChainMatch: &listenerv3.FilterChainMatch{},
		Filters:          []*listenerv3.Filter{tcpProxy(o.fallbackCluster(), o, true)},
	}
}

var (
	httpInspectorConfig = protoconv.Constant(func() proto.Message { return &httpinspector.HttpInspector{} })
	tlsInspectorConfig  = protoconv.Constant(func() proto.Message {
		return &tlsinspector.TlsInspector{InitialReadBufferSize: wrapperspb.UInt32(512)}
	})
	originalDstConfig = protoconv.Constant(func() proto.Message { return &origdst.OriginalDst{} })
)

func httpInspector() *listenerv3.ListenerFilter {
	return &listenerv3.ListenerFilter{Name: "envoy.filters.listener.http_inspector",
		ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: httpInspectorConfig()}}
}

func tlsInspector() *listenerv3.ListenerFilter {
	return &listenerv3.ListenerFilter{Name: "envoy.filters.listener.tls_inspector",
		ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: tlsInspectorConfig()}}
}

// httpListener serves every HTTP service of a port, picked by host through
// RDS; what the HTTP inspector does not recognise as HTTP goes to the
// passthrough (or black hole) like any unknown destination.
func httpListener(port int, o Options) *listenerv3.Listener {
	name := wildcard + "_" + strconv.Itoa(port)
	l := outboundListener(name, wildcard, port)
	l.ListenerFilters = []*listenerv3.ListenerFilter{httpInspector()}
	l.FilterChains = []*listenerv3.FilterChain{{
		FilterChainMatch:              &listenerv3.FilterChainMatch{TransportProtocol: "raw_buffer", ApplicationProtocols: []string{"http/1.1", "h2c"}},
		Filters:                       []*listenerv3.Filter{outboundHTTP("outbound_"+name+";", strconv.Itoa(port), o)},
		TransportSocketConnectTimeout: connectTimeout,
	}}
	l.DefaultFilterChain = passthroughChain(o)
	return l
}

// sniffedService is a service port whose protocol is not declared.
type sniffedService struct {
	svc  *model.Service
	port *model.Port
}

// addSniffedChains lets the services of an HTTP listener's port whose
// protocol is not declared also take TCP: for each one's VIP, HTTP (as the
// HTTP inspector tells) goes to the port's routes and anything else to the
// service's cluster, not to the passthrough. Both chains match the VIP, as
// Envoy matches the destination address before the application protocol. A
// listener the port lost to another (a TCP wildcard listener) is left
// alone.
func addSniffedChains(l *listenerv3.Listener, port int, svcs []sniffedService, o Options) {
	if l == nil || l.DefaultFilterChain == nil || len(l.ListenerFilters) == 0 || l.ListenerFilters[0].Name != httpInspector().Name {
		return
	}
	sort.Slice(svcs, func(i, j int) bool { return svcs[i].svc.Hostname < svcs[j].svc.Hostname })
	seen := map[string]bool{}
	for _, s := range svcs {
		vip := s.svc.DefaultAddress
		if seen[vip] {
			continue // two services on one VIP and port: the first keeps it
		}
		seen[vip] = true
		match := func(alpn []string) *listenerv3.FilterChainMatch {
			return &listenerv3.FilterChainMatch{
				PrefixRanges:         []*core.CidrRange{{AddressPrefix: vip, PrefixLen: wrapperspb.UInt32(hostPrefixLen(vip))}},
				ApplicationProtocols: alpn,
			}
		}
		c := cluster.SubsetKey(cluster.Outbound, "", s.svc.Hostname, port)
		l.FilterChains = append(l.FilterChains,
			&listenerv3.FilterChain{FilterChainMatch: match([]string{"http/1.1", "h2c"}),
				Filters:                       []*listenerv3.Filter{outboundHTTP("outbound_"+l.Name+";", strconv.Itoa(port), o)},
				TransportSocketConnectTimeout: connectTimeout},
			&listenerv3.FilterChain{FilterChainMatch: match(nil),
				Filters:                       []*listenerv3.Filter{tcpProxy(c, o, true)},
				TransportSocketConnectTimeout: connectTimeout},
		)
	}
}

// hostPrefixLen is the prefix length of one address: 32, or 128 for IPv6.
func hostPrefixLen(ip string) uint32 {
	if strings.Contains(ip, ":") {
		return 128
	}
	return 32
}

// tcpListener sends a TCP service port to its cluster; a service without a
// virtual IP takes the wildcard address of the port.
func tcpListener(svc *model.Service, p *model.Port, o Options) *listenerv3.Listener {
	ip := wildcard
	if hasVIP(svc) {
		ip = svc.DefaultAddress
	}
	l := outboundListener(ip+"_"+strconv.Itoa(p.Port), ip, p.Port)
	c := cluster.SubsetKey(cluster.Outbound, "", svc.Hostname, p.Port)
	l.FilterChains = []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{tcpProxy(c, o, true)}, TransportSocketConnectTimeout: connectTimeout}}
	return l
}

// tlsListener serves the TLS services without a VIP that share a port: the
// TLS inspector reads the server name and a chain per service matches it.
func tlsListener(port int, services []*model.Service, o Options) *listenerv3.Listener {
	l := outboundListener(wildcard+"_"+strconv.Itoa(port), wildcard, port)
	l.ListenerFilters = []*listenerv3.ListenerFilter{tlsInspector()}
	sort.Slice(services, func(i, j int) bool { return services[i].Hostname < services[j].Hostname })
	seen := map[string]bool{}
	for _, svc := range services {
		if seen[svc.Hostname] {
			continue
		}
		seen[svc.Hostname] = true
		c := cluster.SubsetKey(cluster.Outbound, "", svc.Hostname, port)
		l.FilterChains = append(l.FilterChains, &listenerv3.FilterChain{
			FilterChainMatch:              &listenerv3.FilterChainMatch{ServerNames: []string{svc.Hostname}},
			Filters:                       []*listenerv3.Filter{tcpProxy(c, o, true)},
			TransportSocketConnectTimeout: connectTimeout,
		})
	}
	l.DefaultFilterChain = passthroughChain(o)
	return l
}

// virtualOutbound captures redirected outbound traffic and hands each
// connection to the listener of its original destination; what no listener
// takes goes to the passthrough (ALLOW_ANY) or black hole (REGISTRY_ONLY).
func virtualOutbound(o Options) *listenerv3.Listener {
	return &listenerv3.Listener{
		Name:             VirtualOutbound,
		Address:          address(wildcard, OutboundPort),
		TrafficDirection: core.TrafficDirection_OUTBOUND,
		UseOriginalDst:   wrapperspb.Bool(true),
		FilterChains: []*listenerv3.FilterChain{
			loopGuard(VirtualOutbound, OutboundPort),
			{Name: VirtualOutbound + "-catchall-tcp", Filters: []*listenerv3.Filter{tcpProxy(o.fallbackCluster(), o, true)}},
		},
		AccessLog:                            o.noRouteLogs(),
		MaxConnectionsToAcceptPerSocketEvent: wrapperspb.UInt32(1),
	}
}
