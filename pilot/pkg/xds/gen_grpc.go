package xds

import (
	"net"
	"sort"
	"strconv"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pkg/config"
)

// GRPCGenerator is the node metadata GENERATOR of proxyless gRPC clients.
const GRPCGenerator = "grpc"

// RegisterGRPC installs the proxyless gRPC generators: API listeners named
// <host>:<port>, one route configuration per listener
// (outbound|<port>||<host>), and the clusters and endpoints the client asks
// for by name, in the shape grpc-go accepts (no sidecar-only fields).
func (g *SidecarGenerators) RegisterGRPC(s *DiscoveryServer) {
	s.RegisterGeneratorFor(GRPCGenerator, ListenerType, GeneratorFunc(g.grpcListeners))
	s.RegisterGeneratorFor(GRPCGenerator, RouteType, GeneratorFunc(g.grpcRoutes))
	s.RegisterGeneratorFor(GRPCGenerator, ClusterType, GeneratorFunc(g.grpcClusters))
	s.RegisterGeneratorFor(GRPCGenerator, EndpointType, GeneratorFunc(g.endpoints))
}

// grpcTarget resolves "host:port" to a visible service and port.
func grpcTarget(push *model.PushContext, proxy *model.Proxy, name string) (*model.Service, *model.Port) {
	host, p, err := net.SplitHostPort(name)
	if err != nil {
		return nil, nil
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, nil
	}
	svc := push.ServiceForHostname(proxy, host)
	if svc == nil {
		return nil, nil
	}
	sp, ok := svc.Ports.GetByPort(port)
	if !ok {
		return nil, nil
	}
	return svc, sp
}

func (g *SidecarGenerators) grpcListeners(proxy *model.Proxy, w *WatchedResource, req *model.PushRequest) ([]*discovery.Resource, error) {
	names := w.Names()
	sort.Strings(names)
	var out []*listenerCfg
	for _, name := range names {
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
				{Name: "envoy.filters.http.fault", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: typed(&faultv3.HTTPFault{})}},
				{Name: "envoy.filters.http.router", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: typed(&routerv3.Router{})}},
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
			ApiListener: &listenerv3.ApiListener{ApiListener: typed(m)},
		})
	}
	return toResources(ListenerType, out, func(l *listenerCfg) string { return l.Name }), nil
}

func typed(m proto.Message) *anypb.Any {
	a, _ := anypb.New(m)
	return a
}

func virtualServiceHosts(c *config.Config) []string {
	spec, _ := c.Spec.(*networking.VirtualService)
	return spec.GetHosts()
}

func (g *SidecarGenerators) grpcRoutes(proxy *model.Proxy, w *WatchedResource, req *model.PushRequest) ([]*discovery.Resource, error) {
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
	return toResources(RouteType, out, func(r *routeCfg) string { return r.Name }), nil
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

func (g *SidecarGenerators) grpcClusters(proxy *model.Proxy, w *WatchedResource, req *model.PushRequest) ([]*discovery.Resource, error) {
	push := req.Push
	want := map[string]bool{}
	hosts := map[string]bool{}
	for _, n := range w.Names() {
		if _, _, host, _, ok := cluster.ParseSubsetKey(n); ok {
			want[n] = true
			hosts[host] = true
		}
	}
	var out []*clusterCfg
	for host := range hosts {
		svc := push.ServiceForHostname(proxy, host)
		if svc == nil {
			continue
		}
		for _, c := range cluster.BuildOutbound(svc, cluster.Options{Mesh: push.Mesh, DestinationRule: destinationRule(push, proxy, svc)}) {
			if want[c.Name] || w.Wildcard {
				out = append(out, grpcCluster(c))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return toResources(ClusterType, out, func(c *clusterCfg) string { return c.Name }), nil
}

// grpcCluster keeps what proxyless clients use: discovery, load balancing,
// circuit breakers and outlier detection. Sidecar transport sockets (mTLS
// through the agent's SDS) do not apply to them.
func grpcCluster(c *clusterv3.Cluster) *clusterv3.Cluster {
	out := &clusterv3.Cluster{
		Name: c.Name, AltStatName: c.AltStatName, ClusterDiscoveryType: c.ClusterDiscoveryType,
		EdsClusterConfig: c.EdsClusterConfig, LbPolicy: c.LbPolicy, LbConfig: c.LbConfig,
		OutlierDetection: c.OutlierDetection, LoadAssignment: c.LoadAssignment, ConnectTimeout: c.ConnectTimeout,
	}
	if th := c.GetCircuitBreakers().GetThresholds(); len(th) > 0 && th[0].MaxRequests != nil {
		out.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{MaxRequests: th[0].MaxRequests}}}
	}
	return out
}
