package waypoint

import (
	"strconv"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	commonsfs "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/set_filter_state/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	netsfs "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/set_filter_state/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	uuidv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/request_id/uuid/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
	"github.com/meshplane/istiod/pkg/protoconv"
)

var (
	faultConfig = protoconv.Constant(func() proto.Message { return &faultv3.HTTPFault{} })
	corsConfig  = protoconv.Constant(func() proto.Message { return &corsv3.Cors{} })
	uuidConfig  = protoconv.Constant(func() proto.Message {
		return &uuidv3.UuidRequestIdConfig{UseRequestIdForTraceSampling: wrapperspb.Bool(true)}
	})
	upstreamPeerMetadata = typedStruct("type.googleapis.com/io.istio.http.peer_metadata.Config", map[string]any{
		"upstream_discovery": []any{map[string]any{"workload_discovery": map[string]any{}}},
	})
	// connectAuthorityNetwork restores, on a direct chain, the original
	// destination connect_terminate read from the CONNECT authority.
	connectAuthorityNetwork = protoconv.Constant(func() proto.Message {
		return &netsfs.Config{OnNewConnection: []*commonsfs.FilterStateValue{
			filterState(originalDstKey+".local_ip", "", "%FILTER_STATE("+originalDstKey+".local_ip:PLAIN)%")}}
	})
)

func statPrefix(port int) string { return "inbound_0.0.0.0_" + strconv.Itoa(port) + ";" }

// httpChain is the chain of an HTTP service port: routes from the
// service's VirtualServices (else one to its inbound-vip cluster), behind
// the service's authorization filters.
func httpChain(s Service, p *model.Port, o Options) *listenerv3.FilterChain {
	name := ClusterName("http", s.Service.Hostname, p.Port)
	rc := serviceRouteConfig(s, p.Port, name, o)
	m := connectionManager(statPrefix(p.Port), rc, s.HTTPPolicy, o)
	if p.Protocol.IsHTTP2() {
		m.Http2ProtocolOptions = &core.Http2ProtocolOptions{}
	}
	return &listenerv3.FilterChain{Name: name, Filters: []*listenerv3.Filter{networkFilter(hcmName, protoconv.MessageToAny(m))}}
}

// tcpChain is the chain of a TCP service port: metadata exchange, the
// service's authorization filters, a TCP proxy to its inbound-vip cluster.
func tcpChain(s Service, p *model.Port, o Options) *listenerv3.FilterChain {
	name := ClusterName("tcp", s.Service.Hostname, p.Port)
	fs := append([]*listenerv3.Filter{networkFilter(telemetry.MetadataExchangeName, telemetry.MetadataExchange())}, s.TCPPolicy...)
	return &listenerv3.FilterChain{Name: name, Filters: append(fs, tcpProxyTo(name, o))}
}

func tcpProxyTo(cluster string, o Options) *listenerv3.Filter {
	return networkFilter(tcpProxyName, protoconv.MessageToAny(&tcpproxy.TcpProxy{StatPrefix: cluster,
		ClusterSpecifier: &tcpproxy.TcpProxy_Cluster{Cluster: cluster}, AccessLog: o.AccessLogs}))
}

// directTCPChain takes TCP addressed to a workload: tunnelled again to it
// through encap.
func directTCPChain(o Options) *listenerv3.FilterChain {
	fs := []*listenerv3.Filter{networkFilter("connect_authority", connectAuthorityNetwork()),
		networkFilter(telemetry.MetadataExchangeName, telemetry.MetadataExchange())}
	fs = append(append(fs, o.DirectTCPPolicy...), tcpProxyTo(Encap, o))
	return &listenerv3.FilterChain{Name: DirectTCP, Filters: fs}
}

// directHTTPChain takes HTTP addressed to a workload: one route to encap.
func directHTTPChain(o Options) *listenerv3.FilterChain {
	rc := defaultRouteConfig(&model.Service{}, 0, Encap, o)
	m := connectionManager(statPrefix(0), rc, o.DirectHTTPPolicy, o)
	return &listenerv3.FilterChain{Name: DirectHTTP, Filters: []*listenerv3.Filter{
		networkFilter("connect_authority", connectAuthorityNetwork()),
		networkFilter(hcmName, protoconv.MessageToAny(m))}}
}

// connectionManager is the HTTP connection manager of main_internal's
// chains: policy filters, gRPC stats, fault, CORS, the upstream peer
// metadata discovery, the router.
func connectionManager(prefix string, rc *routev3.RouteConfiguration, policy []*hcm.HttpFilter, o Options) *hcm.HttpConnectionManager {
	fs := append([]*hcm.HttpFilter{}, policy...)
	fs = append(fs,
		httpFilter(telemetry.GRPCStatsName, telemetry.GRPCStats()),
		httpFilter("envoy.filters.http.fault", faultConfig()),
		httpFilter("envoy.filters.http.cors", corsConfig()),
		httpFilter("waypoint_upstream_peer_metadata", upstreamPeerMetadata()),
		httpFilter(routerName, routerConfig()))
	return &hcm.HttpConnectionManager{
		StatPrefix:                   prefix,
		RouteSpecifier:               &hcm.HttpConnectionManager_RouteConfig{RouteConfig: rc},
		HttpFilters:                  fs,
		Tracing:                      o.Tracing,
		AccessLog:                    o.AccessLogs,
		ServerName:                   "istio-envoy",
		StreamIdleTimeout:            durationpb.New(0),
		UseRemoteAddress:             wrapperspb.Bool(false),
		Proxy_100Continue:            true,
		UpgradeConfigs:               []*hcm.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket"}},
		NormalizePath:                wrapperspb.Bool(true),
		PathWithEscapedSlashesAction: hcm.HttpConnectionManager_KEEP_UNCHANGED,
		RequestIdExtension:           &hcm.RequestIDExtension{TypedConfig: uuidConfig()},
	}
}

func inboundVirtualHost(port int) string { return "inbound|http|" + strconv.Itoa(port) }

// serviceRouteConfig merges the HTTP routes the service's VirtualServices
// have for the port, their destinations renamed to the waypoint's
// clusters; without any, the default route to cluster.
func serviceRouteConfig(s Service, port int, clusterName string, o Options) *routev3.RouteConfiguration {
	var routes []*routev3.Route
	for _, vs := range s.VirtualServices {
		vh := route.BuildVirtualHost(route.ServiceRoutes{Service: s.Service, VirtualService: vs}, port, o.Routes)
		if vh == nil || isDefaultOnly(vh.Routes) {
			continue // nothing of it applies to the port
		}
		for _, r := range vh.Routes {
			renameClusters(r, o)
		}
		routes = append(routes, vh.Routes...)
	}
	if len(routes) == 0 {
		return defaultRouteConfig(s.Service, port, clusterName, o)
	}
	domains := []string{"*"}
	if s.Service.Resolution == model.DynamicDNS {
		domains = []string{s.Service.Hostname}
	}
	return &routev3.RouteConfiguration{
		Name:             clusterName,
		VirtualHosts:     []*routev3.VirtualHost{{Name: inboundVirtualHost(port), Domains: domains, Routes: routes}},
		ValidateClusters: wrapperspb.Bool(false),
	}
}

// isDefaultOnly tells the fallback BuildVirtualHost gives a
// VirtualService without routes for the port: the default route alone,
// which carries no config metadata.
func isDefaultOnly(rs []*routev3.Route) bool {
	return len(rs) == 1 && rs[0].Name == route.DefaultRoute && rs[0].Metadata == nil
}

// defaultRouteConfig is the single route of a port without
// VirtualService routes (and of direct-http): everything to clusterName.
func defaultRouteConfig(svc *model.Service, port int, clusterName string, o Options) *routev3.RouteConfiguration {
	vh := route.BuildVirtualHost(route.ServiceRoutes{Service: svc}, port, o.Routes)
	for _, r := range vh.Routes {
		if ra := r.GetRoute(); ra != nil {
			ra.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: clusterName}
		}
	}
	return &routev3.RouteConfiguration{
		Name:                           clusterName,
		VirtualHosts:                   []*routev3.VirtualHost{{Name: inboundVirtualHost(port), Domains: []string{"*"}, Routes: vh.Routes}},
		ValidateClusters:               wrapperspb.Bool(false),
		MaxDirectResponseBodySizeBytes: wrapperspb.UInt32(1 << 20),
	}
}

// renameClusters points a route's destinations that are services of the
// waypoint at their inbound-vip clusters (subset "http" or "tcp" by the
// port's protocol, then "/<subset>"); other destinations stay outbound.
func renameClusters(r *routev3.Route, o Options) {
	ra := r.GetRoute()
	if ra == nil {
		return
	}
	switch c := ra.ClusterSpecifier.(type) {
	case *routev3.RouteAction_Cluster:
		c.Cluster = inboundCluster(c.Cluster, o)
	case *routev3.RouteAction_WeightedClusters:
		for _, w := range c.WeightedClusters.GetClusters() {
			w.Name = inboundCluster(w.Name, o)
		}
	}
	for _, m := range ra.RequestMirrorPolicies {
		m.Cluster = inboundCluster(m.Cluster, o)
	}
}

func inboundCluster(name string, o Options) string {
	dir, subset, host, port, ok := cluster.ParseSubsetKey(name)
	if !ok || dir != cluster.Outbound || o.IsWaypointService == nil || !o.IsWaypointService(host) {
		return name
	}
	var svc *model.Service
	if o.Routes.LookupService != nil {
		svc = o.Routes.LookupService(host)
	}
	return ClusterName(portSubset(svc, port, subset), host, port)
}

// portSubset is the inbound-vip subset of a destination: "tcp" for a TCP
// port of the service, else "http", then "/<subset>" when one is named.
func portSubset(svc *model.Service, port int, subset string) string {
	s := "http"
	if svc != nil {
		if p, ok := svc.Ports.GetByPort(port); ok && !p.Protocol.IsHTTP() && !p.Protocol.IsUnsupported() {
			s = "tcp"
		}
	}
	if subset != "" {
		s += "/" + subset
	}
	return s
}
