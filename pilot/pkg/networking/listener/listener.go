// Package listener translates the services a sidecar sees into Envoy
// listeners (LDS): virtualOutbound on 15001 (captures outbound traffic and
// hands it to the listener of its original destination), virtualInbound on
// 15006, an HTTP listener 0.0.0.0_<port> per HTTP port using RDS, and a TCP
// proxy listener <vip>_<port> per TCP service port.
package listener

import (
	"sort"
	"strconv"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	httpinspector "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/http_inspector/v3"
	origdst "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	uuidv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/request_id/uuid/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// Well-known listener names and ports.
const (
	VirtualOutbound = "virtualOutbound"
	VirtualInbound  = "virtualInbound"
	OutboundPort    = 15001
	InboundPort     = 15006
	wildcard        = "0.0.0.0"
)

// Options are the proxy-dependent inputs.
type Options struct {
	// AllowAny sends unknown outbound traffic to PassthroughCluster,
	// otherwise to BlackHoleCluster (REGISTRY_ONLY).
	AllowAny bool
	// Inbound are the proxy's own service targets (port -> services).
	Inbound map[int][]*model.Service
	// AccessLogFile and AccessLogFormat come from the mesh config; an empty
	// file means no access log.
	AccessLogFile   string
	AccessLogFormat string
}

func typed(m proto.Message) *anypb.Any {
	a, _ := anypb.New(m)
	return a
}

// BuildSidecarListeners builds every listener of a sidecar for the services
// it sees. Sorted by name.
func BuildSidecarListeners(services []*model.Service, o Options) []*listenerv3.Listener {
	httpPorts := map[int]bool{}
	var out []*listenerv3.Listener
	for _, svc := range services {
		for _, p := range svc.Ports {
			switch {
			case p.Protocol.IsHTTP() || p.Protocol == protocol.Unsupported:
				if !httpPorts[p.Port] {
					httpPorts[p.Port] = true
					out = append(out, httpListener(p.Port, o))
				}
			case p.Protocol == protocol.UDP:
			default:
				if l := tcpListener(svc, p, o); l != nil {
					out = append(out, l)
				}
			}
		}
	}
	out = dedupeByName(out)
	out = append(out, virtualOutbound(o), virtualInbound(o))
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func dedupeByName(ls []*listenerv3.Listener) []*listenerv3.Listener {
	seen := map[string]bool{}
	var out []*listenerv3.Listener
	for _, l := range ls {
		if !seen[l.Name] {
			seen[l.Name] = true
			out = append(out, l)
		}
	}
	return out
}

func address(ip string, port int) *core.Address {
	return &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
		Address: ip, PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(port)}}}}
}

func adsSource() *core.ConfigSource {
	return &core.ConfigSource{ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
		InitialFetchTimeout: durationpb.New(0), ResourceApiVersion: core.ApiVersion_V3}
}

// httpConnectionManager routes through the named RDS configuration.
func httpConnectionManager(statPrefix, routeConfig string, o Options) *listenerv3.Filter {
	m := &hcm.HttpConnectionManager{
		StatPrefix: statPrefix,
		RouteSpecifier: &hcm.HttpConnectionManager_Rds{Rds: &hcm.Rds{
			ConfigSource: adsSource(), RouteConfigName: routeConfig}},
		HttpFilters: []*hcm.HttpFilter{
			{Name: "envoy.filters.http.fault", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: typed(&faultv3.HTTPFault{})}},
			{Name: "envoy.filters.http.cors", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: typed(&corsv3.Cors{})}},
			{Name: "envoy.filters.http.router", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: typed(&routerv3.Router{})}},
		},
		StreamIdleTimeout:            durationpb.New(0),
		AccessLog:                    o.accessLogs(),
		UseRemoteAddress:             wrapperspb.Bool(false),
		Proxy_100Continue:            true,
		NormalizePath:                wrapperspb.Bool(true),
		UpgradeConfigs:               []*hcm.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket"}},
		PathWithEscapedSlashesAction: hcm.HttpConnectionManager_KEEP_UNCHANGED,
		RequestIdExtension: &hcm.RequestIDExtension{TypedConfig: typed(&uuidv3.UuidRequestIdConfig{
			UseRequestIdForTraceSampling: wrapperspb.Bool(true)})},
	}
	return &listenerv3.Filter{Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: typed(m)}}
}

func tcpProxyFilter(statPrefix, clusterName string, o Options) *listenerv3.Filter {
	return &listenerv3.Filter{Name: "envoy.filters.network.tcp_proxy", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: typed(&tcpproxy.TcpProxy{
		StatPrefix: statPrefix, ClusterSpecifier: &tcpproxy.TcpProxy_Cluster{Cluster: clusterName}, AccessLog: o.accessLogs()})}}
}

// httpListener serves every HTTP service of a port, picked by host through
// RDS; what the HTTP inspector does not recognise as HTTP goes to the
// passthrough (or black hole) like any unknown destination.
func httpListener(port int, o Options) *listenerv3.Listener {
	name := wildcard + "_" + strconv.Itoa(port)
	fallback := cluster.BlackHole
	if o.AllowAny {
		fallback = cluster.Passthrough
	}
	return &listenerv3.Listener{
		Name:             name,
		Address:          address(wildcard, port),
		TrafficDirection: core.TrafficDirection_OUTBOUND,
		BindToPort:       wrapperspb.Bool(false),
		ListenerFilters: []*listenerv3.ListenerFilter{{Name: "envoy.filters.listener.http_inspector",
			ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: typed(&httpinspector.HttpInspector{})}}},
		ListenerFiltersTimeout:           durationpb.New(0),
		ContinueOnListenerFiltersTimeout: true,
		FilterChains: []*listenerv3.FilterChain{{
			FilterChainMatch:              &listenerv3.FilterChainMatch{TransportProtocol: "raw_buffer", ApplicationProtocols: []string{"http/1.1", "h2c"}},
			Filters:                       []*listenerv3.Filter{httpConnectionManager("outbound_"+name+";", strconv.Itoa(port), o)},
			TransportSocketConnectTimeout: durationpb.New(15 * time.Second),
		}},
		DefaultFilterChain: &listenerv3.FilterChain{
			Name:             "PassthroughFilterChain",
			FilterChainMatch: &listenerv3.FilterChainMatch{},
			Filters:          []*listenerv3.Filter{tcpProxyFilter(fallback, fallback, o)},
		},
	}
}

// tcpListener sends a TCP service port to its cluster; a service without a
// virtual IP shares the wildcard address of the port.
func tcpListener(svc *model.Service, p *model.Port, o Options) *listenerv3.Listener {
	ip := svc.DefaultAddress
	if ip == "" || ip == model.UnspecifiedIP {
		ip = wildcard
	}
	name := ip + "_" + strconv.Itoa(p.Port)
	c := cluster.SubsetKey(cluster.Outbound, "", svc.Hostname, p.Port)
	return &listenerv3.Listener{
		Name:             name,
		Address:          address(ip, p.Port),
		TrafficDirection: core.TrafficDirection_OUTBOUND,
		BindToPort:       wrapperspb.Bool(false),
		FilterChains:     []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{tcpProxyFilter(c, c, o)}}},
	}
}

// virtualOutbound captures redirected outbound traffic and hands each
// connection to the listener of its original destination; what no listener
// takes goes to the passthrough (ALLOW_ANY) or black hole (REGISTRY_ONLY).
func virtualOutbound(o Options) *listenerv3.Listener {
	fallback := cluster.BlackHole
	if o.AllowAny {
		fallback = cluster.Passthrough
	}
	return &listenerv3.Listener{
		Name:             VirtualOutbound,
		Address:          address(wildcard, OutboundPort),
		TrafficDirection: core.TrafficDirection_OUTBOUND,
		UseOriginalDst:   wrapperspb.Bool(true),
		FilterChains: []*listenerv3.FilterChain{
			loopGuard(VirtualOutbound, OutboundPort, o),
			{Name: VirtualOutbound + "-catchall-tcp", Filters: []*listenerv3.Filter{tcpProxyFilter(fallback, fallback, o)}},
		},
	}
}

// loopGuard drops connections addressed to the capture port itself, which
// would otherwise loop through the listener forever.
func loopGuard(listener string, port int, o Options) *listenerv3.FilterChain {
	return &listenerv3.FilterChain{
		Name:             listener + "-blackhole",
		FilterChainMatch: &listenerv3.FilterChainMatch{DestinationPort: wrapperspb.UInt32(uint32(port))},
		Filters:          []*listenerv3.Filter{tcpProxyFilter(cluster.BlackHole, cluster.BlackHole, o)},
	}
}

// virtualInbound accepts redirected inbound traffic: one chain per port of
// the proxy's services to its inbound cluster, and a passthrough chain.
func virtualInbound(o Options) *listenerv3.Listener {
	inbound := o.Inbound
	l := &listenerv3.Listener{
		Name:             VirtualInbound,
		Address:          address(wildcard, InboundPort),
		TrafficDirection: core.TrafficDirection_INBOUND,
		ListenerFilters: []*listenerv3.ListenerFilter{{Name: "envoy.filters.listener.original_dst",
			ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: typed(&origdst.OriginalDst{})}}},
	}
	l.FilterChains = append(l.FilterChains, loopGuard(VirtualInbound, InboundPort, o))
	ports := make([]int, 0, len(inbound))
	for p := range inbound {
		ports = append(ports, p)
	}
	sort.Ints(ports)
	for _, p := range ports {
		c := cluster.SubsetKey(cluster.Inbound, "", "", p)
		l.FilterChains = append(l.FilterChains, &listenerv3.FilterChain{
			Name:             c,
			FilterChainMatch: &listenerv3.FilterChainMatch{DestinationPort: wrapperspb.UInt32(uint32(p))},
			Filters:          []*listenerv3.Filter{tcpProxyFilter(c, c, o)},
		})
	}
	l.FilterChains = append(l.FilterChains, &listenerv3.FilterChain{
		Name:    "InboundPassthroughFilterChain",
		Filters: []*listenerv3.Filter{tcpProxyFilter(cluster.InboundPassthrough, cluster.InboundPassthrough, o)},
	})
	return l
}
