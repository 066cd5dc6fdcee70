package listener

import (
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	uuidv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/request_id/uuid/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// Configs that never vary, packed once (shared: never modified).
var (
	faultConfig  = protoconv.Constant(func() proto.Message { return &faultv3.HTTPFault{} })
	corsConfig   = protoconv.Constant(func() proto.Message { return &corsv3.Cors{} })
	routerConfig = protoconv.Constant(func() proto.Message { return &routerv3.Router{} })
	uuidConfig   = protoconv.Constant(func() proto.Message {
		return &uuidv3.UuidRequestIdConfig{UseRequestIdForTraceSampling: wrapperspb.Bool(true)}
	})
	uuidNoSampling = protoconv.Constant(func() proto.Message {
		return &uuidv3.UuidRequestIdConfig{UseRequestIdForTraceSampling: wrapperspb.Bool(false)}
	})
)

func httpFilter(name string, cfg *anypb.Any) *hcm.HttpFilter {
	return &hcm.HttpFilter{Name: name, ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: cfg}}
}

// httpFilters is Istio's HTTP filter chain of a direction: peer metadata,
// on inbound the policy filters (ext_authz, jwt_authn, RBAC), gRPC stats,
// ALPN override on outbound (it tells the peer which HTTP version comes
// over mTLS), then fault, CORS, the Telemetry stats filters and the router.
func httpFilters(d telemetry.Direction, policy, stats []*hcm.HttpFilter) []*hcm.HttpFilter {
	fs := []*hcm.HttpFilter{httpFilter(telemetry.MetadataExchangeName, telemetry.HTTPPeerMetadata(d))}
	if d == telemetry.Inbound {
		fs = append(fs, policy...)
	}
	fs = append(fs, httpFilter(telemetry.GRPCStatsName, telemetry.GRPCStats()))
	if d == telemetry.Outbound {
		fs = append(fs, httpFilter(telemetry.ALPNName, telemetry.ALPN()))
	}
	fs = append(fs, httpFilter("envoy.filters.http.fault", faultConfig()), httpFilter("envoy.filters.http.cors", corsConfig()))
	fs = append(fs, stats...)
	return append(fs, httpFilter("envoy.filters.http.router", routerConfig()))
}

// connectionManager has the settings both directions share.
func connectionManager(statPrefix string, d telemetry.Direction, o Options) *hcm.HttpConnectionManager {
	var stats []*hcm.HttpFilter
	rid := uuidConfig()
	if o.dir != nil {
		stats = o.dir.HTTPStats
		if o.dir.NoRequestIDSampling {
			rid = uuidNoSampling()
		}
	}
	filters := httpFilters(d, o.InboundHTTPPolicy, stats)
	if d == telemetry.Outbound {
		// forward proxy filters go right before the router: the one of
		// the DYNAMIC_DNS service the chain was built for, then under
		// ALLOW_ANY_DYNAMIC_DNS the shared one, for the catch-all host
		// that ends every outbound route configuration
		n := len(filters) - 1
		router := filters[n]
		filters = filters[:n:n]
		if o.serviceDNSCache != nil {
			filters = append(filters, dynamicForwardProxy(o.serviceDNSCache))
		}
		if o.DynamicDNSCache != nil {
			filters = append(filters, dynamicForwardProxy(o.DynamicDNSCache))
		}
		filters = append(filters, router)
	}
	m := &hcm.HttpConnectionManager{
		StatPrefix:                   statPrefix,
		HttpFilters:                  filters,
		Tracing:                      o.tracing(),
		StreamIdleTimeout:            durationpb.New(0),
		AccessLog:                    o.accessLogs(),
		UseRemoteAddress:             wrapperspb.Bool(false),
		Proxy_100Continue:            true,
		NormalizePath:                wrapperspb.Bool(true),
		UpgradeConfigs:               []*hcm.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket"}},
		PathWithEscapedSlashesAction: hcm.HttpConnectionManager_KEEP_UNCHANGED,
		RequestIdExtension:           &hcm.RequestIDExtension{TypedConfig: rid},
	}
	if o.IdleTimeout != nil {
		// the proxy's IDLE_TIMEOUT, as Istio sets it on every HCM
		m.CommonHttpProtocolOptions = &core.HttpProtocolOptions{IdleTimeout: o.IdleTimeout}
	}
	applyConnectionSettings(m, o.ConnectionSettings)
	return m
}

func hcmFilter(m *hcm.HttpConnectionManager) *listenerv3.Filter {
	return &listenerv3.Filter{Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: protoconv.MessageToAny(m)}}
}

// outboundHTTP routes through the named RDS configuration.
func outboundHTTP(statPrefix, routeConfig string, o Options) *listenerv3.Filter {
	m := connectionManager(statPrefix, telemetry.Outbound, o)
	m.RouteSpecifier = &hcm.HttpConnectionManager_Rds{Rds: &hcm.Rds{ConfigSource: adsSource(), RouteConfigName: routeConfig}}
	return hcmFilter(m)
}

func adsSource() *core.ConfigSource {
	return &core.ConfigSource{ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
		InitialFetchTimeout: durationpb.New(0), ResourceApiVersion: core.ApiVersion_V3}
}
