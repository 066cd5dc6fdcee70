package waypoint

import (
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	commonsfs "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/set_filter_state/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	httpsfs "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/set_filter_state/v3"
	httpinspector "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/http_inspector/v3"
	origdst "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// Listeners are the waypoint's listeners: connect_terminate, main_internal
// and connect_originate.
func Listeners(svcs []Service, o Options) []*listenerv3.Listener {
	return []*listenerv3.Listener{connectTerminateListener(o), mainInternalListener(svcs, o), connectOriginateListener(o)}
}

// Filter names and constant configs (shared: never modified).
const (
	hcmName      = "envoy.filters.network.http_connection_manager"
	tcpProxyName = "envoy.filters.network.tcp_proxy"
	routerName   = "envoy.filters.http.router"
	origDstName  = "envoy.filters.listener.original_dst"
)

var (
	routerConfig     = protoconv.Constant(func() proto.Message { return &routerv3.Router{} })
	origDstConfig    = protoconv.Constant(func() proto.Message { return &origdst.OriginalDst{} })
	inspectorConfig  = protoconv.Constant(func() proto.Message { return &httpinspector.HttpInspector{} })
	connectAuthority = protoconv.Constant(func() proto.Message {
		return &httpsfs.Config{OnRequestHeaders: []*commonsfs.FilterStateValue{
			filterState(originalDstKey+".local_ip", "", "%REQ(:AUTHORITY)%"),
			filterState("io.istio.connect_authority", "istio.hashable_string", "%REQ(:AUTHORITY)%"),
			filterState(originalDstKey+".remote_ip", "", "%DOWNSTREAM_REMOTE_ADDRESS%"),
			filterState("io.istio.peer_principal", "istio.hashable_string", "%DOWNSTREAM_PEER_URI_SAN%"),
			filterState("io.istio.local_principal", "istio.hashable_string", "%DOWNSTREAM_LOCAL_URI_SAN%"),
		}}
	})
	downstreamPeerMetadata = typedStruct("type.googleapis.com/io.istio.http.peer_metadata.Config", map[string]any{
		"downstream_discovery": []any{map[string]any{"workload_discovery": map[string]any{}}},
		"shared_with_upstream": true,
	})
)

// upstreamFailureFilter passes connections that could not reach their
// upstream (response flag UF); errorStatusFilter responses of 400 and
// above (the runtime key is one Envoy never has: the default applies).
var (
	upstreamFailureFilter = &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_ResponseFlagFilter{
		ResponseFlagFilter: &accesslogv3.ResponseFlagFilter{Flags: []string{"UF"}}}}
	errorStatusFilter = &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_StatusCodeFilter{
		StatusCodeFilter: &accesslogv3.StatusCodeFilter{Comparison: &accesslogv3.ComparisonFilter{Op: accesslogv3.ComparisonFilter_GE,
			Value: &core.RuntimeUInt32{DefaultValue: 400, RuntimeKey: "istio.io/unset"}}}}}
)

func filterState(key, factory, format string) *commonsfs.FilterStateValue {
	return &commonsfs.FilterStateValue{
		Key:        &commonsfs.FilterStateValue_ObjectKey{ObjectKey: key},
		FactoryKey: factory,
		Value: &commonsfs.FilterStateValue_FormatString{FormatString: &core.SubstitutionFormatString{
			Format: &core.SubstitutionFormatString_TextFormatSource{TextFormatSource: &core.DataSource{
				Specifier: &core.DataSource_InlineString{InlineString: format}}}}},
		SharedWithUpstream: commonsfs.FilterStateValue_ONCE,
	}
}

func httpFilter(name string, cfg *anypb.Any) *hcm.HttpFilter {
	return &hcm.HttpFilter{Name: name, ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: cfg}}
}

func networkFilter(name string, cfg *anypb.Any) *listenerv3.Filter {
	return &listenerv3.Filter{Name: name, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: cfg}}
}

func listenerFilter(name string, cfg *anypb.Any) *listenerv3.ListenerFilter {
	return &listenerv3.ListenerFilter{Name: name, ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: cfg}}
}

// connectTerminateListener terminates HBONE on 15008 (mTLS, a client
// certificate required) and hands every CONNECT stream to main_internal,
// with the tunnel's addresses and identities in filter state.
func connectTerminateListener(o Options) *listenerv3.Listener {
	bind := o.Bind
	if bind == "" {
		bind = "0.0.0.0"
	}
	m := &hcm.HttpConnectionManager{
		StatPrefix: ConnectTerminate,
		RouteSpecifier: &hcm.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: "default",
			VirtualHosts: []*routev3.VirtualHost{{Name: "default", Domains: []string{"*"}, Routes: []*routev3.Route{{
				Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_ConnectMatcher_{ConnectMatcher: &routev3.RouteMatch_ConnectMatcher{}}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{
					ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: MainInternal},
					UpgradeConfigs: []*routev3.RouteAction_UpgradeConfig{{UpgradeType: "CONNECT",
						ConnectConfig: &routev3.RouteAction_UpgradeConfig_ConnectConfig{}}},
				}},
			}}}},
		}},
		HttpFilters: []*hcm.HttpFilter{
			httpFilter("waypoint_downstream_peer_metadata", downstreamPeerMetadata()),
			httpFilter("connect_authority", connectAuthority()),
			httpFilter(routerName, routerConfig()),
		},
		Http2ProtocolOptions: &core.Http2ProtocolOptions{
			AllowConnect:         true,
			MaxConcurrentStreams: wrapperspb.UInt32(100),
			ConnectionKeepalive: &core.KeepaliveSettings{Interval: durationpb.New(10 * time.Second),
				Timeout: durationpb.New(20 * time.Second)},
		},
		ServerName:               "istio-envoy",
		StreamIdleTimeout:        durationpb.New(0),
		UseRemoteAddress:         wrapperspb.Bool(false),
		ForwardClientCertDetails: hcm.HttpConnectionManager_APPEND_FORWARD,
		SetCurrentClientCertDetails: &hcm.HttpConnectionManager_SetCurrentClientCertDetails{
			Subject: wrapperspb.Bool(true), Dns: true, Uri: true},
		UpgradeConfigs: []*hcm.HttpConnectionManager_UpgradeConfig{{UpgradeType: "CONNECT"}},
		AccessLog:      telemetry.WithFilter(o.AccessLogs, errorStatusFilter),
	}
	tls := &tlsv3.DownstreamTlsContext{CommonTlsContext: connectTLSContext(o), RequireClientCertificate: wrapperspb.Bool(true)}
	return &listenerv3.Listener{
		Name:      ConnectTerminate,
		AccessLog: telemetry.NoRoute(o.AccessLogs),
		Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
			Address: bind, PortSpecifier: &core.SocketAddress_PortValue{PortValue: HBONEPort}}}},
		FilterChains: []*listenerv3.FilterChain{{
			Name:    "default",
			Filters: []*listenerv3.Filter{networkFilter(hcmName, protoconv.MessageToAny(m))},
			TransportSocket: &core.TransportSocket{Name: "tls",
				ConfigType: &core.TransportSocket_TypedConfig{TypedConfig: protoconv.MessageToAny(tls)}},
		}},
		ConnectionBalanceConfig: &listenerv3.Listener_ConnectionBalanceConfig{
			BalanceType: &listenerv3.Listener_ConnectionBalanceConfig_ExactBalance_{
				ExactBalance: &listenerv3.Listener_ConnectionBalanceConfig_ExactBalance{}}},
	}
}

// connectOriginateListener tunnels what the inbound-vip and encap
// clusters send it to the original destination over HBONE.
func connectOriginateListener(o Options) *listenerv3.Listener {
	tp := &tcpproxy.TcpProxy{
		StatPrefix:       ConnectOriginate,
		ClusterSpecifier: &tcpproxy.TcpProxy_Cluster{Cluster: ConnectOriginate},
		TunnelingConfig:  &tcpproxy.TcpProxy_TunnelingConfig{Hostname: "%DOWNSTREAM_LOCAL_ADDRESS%"},
		AccessLog:        telemetry.WithFilter(o.AccessLogs, upstreamFailureFilter),
	}
	return &listenerv3.Listener{
		Name:              ConnectOriginate,
		AccessLog:         telemetry.NoRoute(o.AccessLogs),
		UseOriginalDst:    wrapperspb.Bool(false),
		ListenerSpecifier: &listenerv3.Listener_InternalListener{InternalListener: &listenerv3.Listener_InternalListenerConfig{}},
		ListenerFilters:   []*listenerv3.ListenerFilter{listenerFilter(origDstName, origDstConfig())},
		FilterChains: []*listenerv3.FilterChain{{
			Filters: []*listenerv3.Filter{networkFilter(tcpProxyName, protoconv.MessageToAny(tp))},
		}},
	}
}
