package listener

import (
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	httpinspector "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/http_inspector/v3"
	origdst "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	tlsinspector "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshplane/istiod/pkg/protoconv"
)

// connectTimeout bounds the transport handshake of outbound chains.
var connectTimeout = durationpb.New(15 * time.Second)

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

// virtualOutbound captures redirected outbound traffic and hands each
// connection to the listener of its original destination; what no listener
// takes goes to the passthrough (ALLOW_ANY) or black hole (REGISTRY_ONLY).
func virtualOutbound(o Options) *listenerv3.Listener {
	l := &listenerv3.Listener{
		Name:                VirtualOutbound,
		Address:             address(o.wildcards()[0], OutboundPort),
		AdditionalAddresses: o.virtualAddresses(OutboundPort, true),
		Transparent:         o.transparent(),
		TrafficDirection:    core.TrafficDirection_OUTBOUND,
		UseOriginalDst:      wrapperspb.Bool(true),
		FilterChains: []*listenerv3.FilterChain{
			loopGuard(VirtualOutbound, OutboundPort),
			{Name: VirtualOutbound + "-catchall-tcp", Filters: []*listenerv3.Filter{tcpProxy(o.fallbackCluster(), o, true)}},
		},
		AccessLog:                            o.noRouteLogs(),
		MaxConnectionsToAcceptPerSocketEvent: wrapperspb.UInt32(1),
	}
	if o.DynamicDNSCache != nil {
		// ALLOW_ANY_DYNAMIC_DNS: the HTTP inspector picks out plain HTTP
		// for the forward proxy chain, between the loop guard and the
		// catch-all
		l.ListenerFilters = []*listenerv3.ListenerFilter{httpInspector()}
		l.FilterChains = []*listenerv3.FilterChain{l.FilterChains[0], dynamicDNSChain(o), l.FilterChains[1]}
	}
	return l
}
