package generators

import (
	"net"
	"sort"
	"strconv"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pilot/pkg/networking/protoconv"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config"
)

// GRPCGenerator is the node metadata GENERATOR of proxyless gRPC clients.
const GRPCGenerator = "grpc"

// RegisterGRPC installs the proxyless gRPC generators: API listeners named
// <host>:<port>, one route configuration per listener
// (outbound|<port>||<host>), and the clusters and endpoints the client asks
// for by name, in the shape grpc-go accepts (no sidecar-only fields).
func (g *SidecarGenerators) RegisterGRPC(s *xds.DiscoveryServer) {
	s.RegisterGeneratorFor(GRPCGenerator, xds.ListenerType, xds.GeneratorFunc(g.grpcListeners))
	s.RegisterGeneratorFor(GRPCGenerator, xds.RouteType, xds.GeneratorFunc(g.grpcRoutes))
	s.RegisterGeneratorFor(GRPCGenerator, xds.ClusterType, xds.GeneratorFunc(g.grpcClusters))
	s.RegisterGeneratorFor(GRPCGenerator, xds.EndpointType, xds.GeneratorFunc(g.endpoints))
}

// grpcTarget resolves "host:port" to a visible service and port. The host
// may be short, as a Kubernetes client would resolve it in the proxy's
// namespace: "reviews" and "reviews.bookinfo" find
// reviews.bookinfo.svc.cluster.local.
func grpcTarget(push *model.PushContext, proxy *model.Proxy, name string) (*model.Service, *model.Port) {
	host, p, err := net.SplitHostPort(name)
	if err != nil {
		return nil, nil
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, nil
	}
	var svc *model.Service
	for _, h := range searchHosts(host, proxy.DNSDomain) {
		if svc = push.ServiceForHostname(proxy, h); svc != nil {
			break
		}
	}
	if svc == nil {
		return nil, nil
	}
	sp, ok := svc.Ports.GetByPort(port)
	if !ok {
		return nil, nil
	}
	return svc, sp
}

// searchHosts is host followed by its expansions along a Kubernetes DNS
// search path for a pod whose domain is dnsDomain (<ns>.svc.<cluster
// domain>): host.<ns>.svc.<domain>, host.svc.<domain>, host.<domain>.
func searchHosts(host, dnsDomain string) []string {
	out := []string{host}
	if dnsDomain == "" || strings.HasSuffix(host, "."+dnsDomain) {
		return out
	}
	out = append(out, host+"."+dnsDomain)
	if i := strings.Index(dnsDomain, ".svc."); i >= 0 {
		out = append(out, host+dnsDomain[i:], host+"."+dnsDomain[i+len(".svc."):])
	}
	return out
}

func (g *SidecarGenerators) grpcListeners(proxy *model.Proxy, w *xds.WatchedResource, req *model.PushRequest) (xds.Generated, error) {
	names := w.Names()
	sort.Strings(names)
	var out []*listenerCfg
	var targets []listener.InboundTarget
	for _, name := range names {
		if addr, ok := strings.CutPrefix(name, GRPCServerListenerPrefix); ok {
			if targets == nil {
				targets = g.proxyTargets(proxy)
			}
			if l := grpcServerListener(name, addr, targets); l != nil {
				out = append(out, l)
			}
			continue
		}
		svc, port := grpcTarget(req.Push, proxy, name)
		if svc == nil {
			continue
		}
		m := &hcm.HttpConnectionManager{
			StatPrefix: name,
			RouteSpecifier: &hcm.HttpConnectionManager_Rds{Rds: &hcm.Rds{
				ConfigSource:    &core.ConfigSource{ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}}},
				RouteConfigName: cluster.SubsetKey(cluster.Outbound, "", svc.Hostname, port.Port),
			}},
			HttpFilters: []*hcm.HttpFilter{
				{Name: "envoy.filters.http.fault", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: protoconv.MessageToAny(&faultv3.HTTPFault{})}},
				{Name: "envoy.filters.http.router", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: protoconv.MessageToAny(&routerv3.Router{})}},
			},
		}
		addr := svc.DefaultAddress
		if addr == "" {
			addr = model.UnspecifiedIP
		}
		out = append(out, &listenerv3.Listener{
			Name: name,
			Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
				Address: addr, PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(port.Port)}}}},
			ApiListener: &listenerv3.ApiListener{ApiListener: protoconv.MessageToAny(m)},
		})
	}
	return toResources(xds.ListenerType, out, func(l *listenerCfg) string { return l.Name }), nil
}

// GRPCServerListenerPrefix starts the names under which proxyless gRPC
// servers ask for their listener (the server_listener_resource_name_template
// of Istio's gRPC bootstrap), followed by the address they listen on.
const GRPCServerListenerPrefix = "xds.istio.io/grpc/lds/inbound/"

// grpcServerListener is the listener of a proxyless gRPC server listening on
// addr ("ip:port"): every RPC is served locally (a non-forwarding route).
// The server only gets one for a port that a service targets on it; without
// its listener a gRPC xDS server does not serve. mTLS and authorization
// policies come with the CA and security issues.
func grpcServerListener(name, addr string, targets []listener.InboundTarget) *listenerCfg {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil
	}
	var target *listener.InboundTarget
	for i := range targets {
		if targets[i].Port == port {
			target = &targets[i]
		}
	}
	if target == nil {
		genLog.Debugf("%s: no service targets port %d of this proxy", name, port)
		return nil
	}
	vhost := "inbound|http|" + p
	m := &hcm.HttpConnectionManager{
		StatPrefix: name,
		RouteSpecifier: &hcm.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: vhost,
			VirtualHosts: []*routev3.VirtualHost{{Name: vhost, Domains: []string{"*"}, Routes: []*routev3.Route{{
				Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_NonForwardingAction{NonForwardingAction: &routev3.NonForwardingAction{}},
			}}}},
		}},
		HttpFilters: []*hcm.HttpFilter{
			{Name: "envoy.filters.http.router", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: protoconv.MessageToAny(&routerv3.Router{})}},
		},
	}
	return &listenerv3.Listener{
		Name: name,
		Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
			Address: host, PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(port)}}}},
		FilterChains: []*listenerv3.FilterChain{{
			Name:    "inbound-plaintext",
			Filters: []*listenerv3.Filter{{Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: protoconv.MessageToAny(m)}}},
		}},
		TrafficDirection: core.TrafficDirection_INBOUND,
	}
}

func virtualServiceHosts(c *config.Config) []string {
	spec, _ := c.Spec.(*networking.VirtualService)
	return spec.GetHosts()
}

func (g *SidecarGenerators) grpcRoutes(proxy *model.Proxy, w *xds.WatchedResource, req *model.PushRequest) (xds.Generated, error) {
	push := req.Push
	names := w.Names()
	sort.Strings(names)
	var out []*routeCfg
	for _, name := range names {
		_, _, host, port, ok := cluster.ParseSubsetKey(name)
		if !ok {
			continue
		}
		svc := push.ServiceForHostname(proxy, host)
		if svc == nil {
			continue
		}
		sr := route.ServiceRoutes{Service: svc, VirtualService: virtualServiceFor(push, proxy, svc.Hostname)}
		rc := route.BuildRouteConfiguration(port, []route.ServiceRoutes{sr}, route.Options{
			ProxyNamespace: proxy.ConfigNamespace, DomainSuffix: push.DomainSuffix(), ProxyLabels: proxy.Labels, Gateway: "mesh"})
		vh := rc.VirtualHosts[0]
		vh.Domains = withPorts(vh.Domains, port)
		for _, r := range vh.Routes {
			toGRPCRoute(r)
		}
		out = append(out, &routev3.RouteConfiguration{Name: name, VirtualHosts: []*routev3.VirtualHost{vh}})
	}
	return toResources(xds.RouteType, out, func(r *routeCfg) string { return r.Name }), nil
}

// withPorts adds "<domain>:<port>" after each domain, as clients dial with
// the port in the authority.
func withPorts(domains []string, port int) []string {
	out := make([]string, 0, 2*len(domains))
	p := ":" + strconv.Itoa(port)
	for _, d := range domains {
		out = append(out, d, d+p)
	}
	return out
}

// toGRPCRoute uses max_stream_duration, which gRPC honours, for the timeout.
func toGRPCRoute(r *routev3.Route) {
	ra := r.GetRoute()
	if ra == nil {
		return
	}
	ra.MaxStreamDuration = &routev3.RouteAction_MaxStreamDuration{MaxStreamDuration: ra.Timeout}
	ra.MaxGrpcTimeout = nil
	r.Name = ""
}

func virtualServiceFor(push *model.PushContext, proxy *model.Proxy, host string) *config.Config {
	vss := push.VirtualServicesForGateway(proxy.ConfigNamespace, "mesh")
	for i := range vss {
		for _, h := range virtualServiceHosts(&vss[i]) {
			if h == host {
				return &vss[i]
			}
		}
	}
	return nil
}

func (g *SidecarGenerators) grpcClusters(proxy *model.Proxy, w *xds.WatchedResource, req *model.PushRequest) (xds.Generated, error) {
	names := w.Names()
	sort.Strings(names)
	var out []*clusterCfg
	for _, name := range names {
		if c := grpcCluster(req.Push, proxy, name); c != nil {
			out = append(out, c)
		}
	}
	return toResources(xds.ClusterType, out, func(c *clusterCfg) string { return c.Name }), nil
}

// grpcCluster builds one requested outbound cluster, or nil when its
// service, port or subset does not exist. As Istio does for proxyless
// clients, it is always an EDS cluster over ADS and carries only what the
// destination rule sets and grpc-go honours: load balancing (see
// grpcLoadBalancer) and max_requests from http2MaxRequests. Connect timeouts,
// outlier detection and the sidecar's default limits are not sent; nor is
// TLS, which needs the certificate providers of an agent's bootstrap.
func grpcCluster(push *model.PushContext, proxy *model.Proxy, name string) *clusterv3.Cluster {
	dir, subset, host, port, ok := cluster.ParseSubsetKey(name)
	if !ok || dir != cluster.Outbound {
		return nil
	}
	svc := push.ServiceForHostname(proxy, host)
	if svc == nil {
		return nil
	}
	if _, ok := svc.Ports.GetByPort(port); !ok {
		return nil
	}
	dr := destinationRule(push, proxy, svc).Rule()
	var root, sub *networking.TrafficPolicy
	if dr != nil {
		root = dr.Spec.(*networking.DestinationRule).GetTrafficPolicy()
	}
	if subset != "" {
		var labels map[string]string
		if labels, sub = subsetOf(dr, subset); labels == nil {
			return nil
		}
	}
	pol := cluster.MergeTrafficPolicy(root, sub, port)
	c := &clusterv3.Cluster{
		Name: name, AltStatName: name + ";",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{ServiceName: name,
			EdsConfig: &core.ConfigSource{ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}}}},
	}
	grpcLoadBalancer(c, pol.GetLoadBalancer())
	if n := pol.GetConnectionPool().GetHttp().GetHttp2MaxRequests(); n > 0 {
		c.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{MaxRequests: wrapperspb.UInt32(uint32(n))}}}
	}
	return c
}

// grpcLoadBalancer sets what Istio sends proxyless clients: LEAST_REQUEST
// when the rule asks for it, and consistent hashing as a ring hash; anything
// else (RANDOM, unset) leaves the client's default, round robin. Istio sends
// Maglev as asked, which grpc-go does not implement: it rejects the whole
// CDS response, so every cluster of the client goes stale. Here a Maglev
// rule gets a ring hash of the default size, the same affinity.
func grpcLoadBalancer(c *clusterv3.Cluster, lb *networking.LoadBalancerSettings) {
	if lb.GetSimple() == networking.LoadBalancerSettings_LEAST_REQUEST {
		c.LbPolicy = clusterv3.Cluster_LEAST_REQUEST
		return
	}
	ch := lb.GetConsistentHash()
	switch {
	case ch == nil:
	case ch.GetMaglev() != nil:
		c.LbPolicy = clusterv3.Cluster_RING_HASH
		c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{MinimumRingSize: wrapperspb.UInt64(1024)}}
	case ch.GetRingHash() != nil:
		c.LbPolicy = clusterv3.Cluster_RING_HASH
		if size := ch.GetRingHash().GetMinimumRingSize(); size > 0 {
			c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{MinimumRingSize: wrapperspb.UInt64(size)}}
		}
	default:
		size := ch.GetMinimumRingSize() //nolint:staticcheck // the deprecated field is what this form of the rule sets
		if size == 0 {
			size = 1024
		}
		c.LbPolicy = clusterv3.Cluster_RING_HASH
		c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{MinimumRingSize: wrapperspb.UInt64(size)}}
	}
}
