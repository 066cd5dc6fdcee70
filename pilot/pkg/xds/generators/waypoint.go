package generators

import (
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	"net/netip"
	"sort"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/endpoint"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
	"github.com/meshplane/istiod/pilot/pkg/networking/waypoint"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pilot/pkg/security/authz"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/ambient"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
	"github.com/meshplane/istiod/pkg/workloadapi"
)

// WaypointSource is what the ambient index says of waypoints: the
// services and workloads that send through one, and which addresses take
// HBONE. Results are the caller's; workloads are shared and immutable.
type WaypointSource interface {
	ServicesForWaypoint(namespace, name string) []ambient.WaypointService
	WorkloadsForWaypoint(namespace, name string) []*workloadapi.Workload
	HBONEAddresses() map[string]bool
}

var _ WaypointSource = (*ambient.Index)(nil)

// labelGatewayName names, on a waypoint's pods, the Gateway they serve.
const labelGatewayName = "gateway.networking.k8s.io/gateway-name"

// WaypointGenerators produce the CDS, EDS, LDS and RDS of waypoint proxies
// (node type "waypoint"), as Istio serves them: HBONE termination, one
// inbound-vip chain and cluster per port of every service that uses the
// waypoint, the direct chains of workload addressing, HBONE origination
// (see pilot/pkg/networking/waypoint). They build everything on each
// request: waypoints are few, and what they serve follows the ambient
// index, whose changes push waypoints with a new snapshot (a waypoint is
// pushed on every change, see model.ProxyNeedsPush).
type WaypointGenerators struct {
	Source WaypointSource
	// Endpoints are the service endpoints (the inbound-vip load
	// assignments).
	Endpoints *model.EndpointIndex
	// JWKS resolves the jwksUri of RequestAuthentications (nil: only
	// inline jwks are used).
	JWKS authn.JwksResolver

	enc *xds.Encodings
}

// Register installs the generators for waypoint proxies.
func (g *WaypointGenerators) Register(s *xds.DiscoveryServer) {
	g.enc = s.Encodings()
	s.RegisterGeneratorForNodeType(model.Waypoint, xds.ClusterType, xds.GeneratorFunc(g.clusters))
	s.RegisterGeneratorForNodeType(model.Waypoint, xds.EndpointType, xds.GeneratorFunc(g.endpoints))
	s.RegisterGeneratorForNodeType(model.Waypoint, xds.ListenerType, xds.GeneratorFunc(g.listeners))
	s.RegisterGeneratorForNodeType(model.Waypoint, xds.RouteType, xds.GeneratorFunc(g.routes))
}

// waypointKey is the Gateway the proxy serves: its gateway-name label in
// its namespace ("" name when it has none).
func waypointKey(proxy *model.Proxy) (namespace, name string) {
	return proxy.ConfigNamespace, proxy.Labels[labelGatewayName]
}

func (g *WaypointGenerators) clusters(proxy *model.Proxy, _ *xds.WatchedResource, req *model.PushRequest) (xds.Generated, error) {
	svcs, o := g.build(req.Push, proxy, false)
	return toResources(g.enc, xds.ClusterType, waypoint.Clusters(svcs, o), func(c *clusterCfg) string { return c.Name }), nil
}

func (g *WaypointGenerators) listeners(proxy *model.Proxy, _ *xds.WatchedResource, req *model.PushRequest) (xds.Generated, error) {
	svcs, o := g.build(req.Push, proxy, true)
	return toResources(g.enc, xds.ListenerType, waypoint.Listeners(svcs, o), func(l *listenerCfg) string { return l.Name }), nil
}

// routes: a waypoint's route configurations are all inline; RDS has
// nothing (Istio answers with an empty set too).
func (g *WaypointGenerators) routes(*model.Proxy, *xds.WatchedResource, *model.PushRequest) (xds.Generated, error) {
	return xds.Generated{}, nil
}

// endpoints answers the watched inbound-vip clusters of the waypoint's
// services; other names get an empty assignment.
func (g *WaypointGenerators) endpoints(proxy *model.Proxy, w *xds.WatchedResource, req *model.PushRequest) (xds.Generated, error) {
	push := req.Push
	names := w.Names()
	sort.Strings(names)
	ours := map[string]*model.Service{}
	for _, s := range g.services(push, proxy) {
		ours[s.Hostname] = s
	}
	var hbone map[string]bool
	var out []*loadAssignment
	for _, name := range names {
		dir, subset, host, port, ok := cluster.ParseSubsetKey(name)
		svc := ours[host]
		if !ok || dir != waypoint.InboundVIP || svc == nil {
			out = append(out, &loadAssignment{ClusterName: name})
			continue
		}
		p, ok := svc.Ports.GetByPort(port)
		// "http/<subset>", "tcp/<subset>": the DestinationRule's subset
		_, ruleSubset, _ := strings.Cut(subset, "/")
		labels, found := waypoint.SubsetLabels(destinationRule(push, proxy, svc).Rule(), ruleSubset)
		if !ok || !found {
			out = append(out, &loadAssignment{ClusterName: name})
			continue
		}
		if hbone == nil && g.Source != nil {
			hbone = g.Source.HBONEAddresses()
		}
		eps := g.serviceEndpoints(svc)
		// endpoints of other networks go through their network's gateways,
		// as for any proxy that is not a sidecar
		o := endpoint.Options{PortName: p.Name, SubsetLabels: labels, Network: proxyNetwork(proxy),
			Gateways: push.NetworkGateways(), IPMode: proxy.IPMode(), NetworkView: networkView(proxy)}
		out = append(out, waypoint.LoadAssignment(name, o, eps, func(network, ip string) bool {
			return hbone[network+"/"+ip]
		}))
	}
	return toResources(g.enc, xds.EndpointType, out, clusterNameOf), nil
}

func (g *WaypointGenerators) serviceEndpoints(svc *model.Service) []*model.IstioEndpoint {
	if g.Endpoints == nil {
		return nil
	}
	shards, ok := g.Endpoints.ShardsFor(svc.Hostname, svc.Attributes.Namespace)
	if !ok {
		return nil
	}
	eps, _ := shards.Ordered()
	return eps
}

// services are the services that use the proxy's waypoint, as the push
// context knows them, oldest first. DYNAMIC_DNS services of the mesh are
// left out, as Istio leaves them.
func (g *WaypointGenerators) services(push *model.PushContext, proxy *model.Proxy) []*model.Service {
	ns, name := waypointKey(proxy)
	if g.Source == nil || name == "" {
		return nil
	}
	var out []*model.Service
	seen := map[string]bool{}
	for _, ws := range g.Source.ServicesForWaypoint(ns, name) {
		svc := push.ServiceForHostnameAndNamespace(ws.Hostname, ws.Namespace)
		if svc == nil || seen[svc.Hostname] || (svc.Resolution == model.DynamicDNS && !svc.MeshExternal) {
			continue
		}
		seen[svc.Hostname] = true
		out = append(out, svc)
	}
	return out
}

// build gathers what the translation needs; withChains adds what only
// listeners use (routes, policies, workloads).
func (g *WaypointGenerators) build(push *model.PushContext, proxy *model.Proxy, withChains bool) ([]waypoint.Service, waypoint.Options) {
	o := waypoint.Options{Mesh: push.Mesh, Namespace: proxy.ConfigNamespace, IPMode: proxy.IPMode()}
	if proxy.IPMode() == model.IPv6 {
		o.Bind = "::"
	}
	svcs := g.services(push, proxy)
	out := make([]waypoint.Service, 0, len(svcs))
	if !withChains {
		for _, svc := range svcs {
			s := waypoint.Service{Service: svc, DestinationRule: destinationRule(push, proxy, svc).Rule()}
			if svc.Resolution == model.DNSLB || svc.Resolution == model.DNSRoundRobinLB {
				s.Endpoints = g.serviceEndpoints(svc)
				s.EndpointView = dnsEndpointView(push, proxy, svc)
			}
			out = append(out, s)
		}
		return out, o
	}
	byHost := map[string]*model.Service{}
	for _, svc := range svcs {
		byHost[svc.Hostname] = svc
	}
	sc := push.SidecarScope(proxy)
	// listeners log as for a sidecar's inbound traffic: its Telemetry's,
	// else the mesh config's file
	tel := telemetry.Compute(push.Telemetry(proxy), push.Mesh)
	if specs, ok := tel.Logging(telemetry.SidecarInbound.Mode()); ok {
		o.AccessLogs = telemetry.AccessLogs(specs, push.Mesh, telemetry.ClusterLookup(lookupCluster(push)))
	} else if f := push.Mesh.GetAccessLogFile(); f != "" {
		o.AccessLogs = []*accesslogv3.AccessLog{telemetry.MeshFileLog(f, push.Mesh)}
	}
	o.Tracing = telemetry.Tracing(push.Mesh, telemetryProxy(proxy))
	o.Routes = route.Options{ProxyNamespace: proxy.ConfigNamespace, DomainSuffix: push.DomainSuffix(), Gateway: "mesh",
		LookupService: func(host string) *model.Service {
			if s := byHost[host]; s != nil {
				return s
			}
			return sc.Service(host)
		}}
	withHashes(&o.Routes, push, proxy)
	o.IsWaypointService = func(host string) bool { return byHost[host] != nil }
	b := authz.New(authz.Options{Mesh: push.Mesh, LookupCluster: lookupCluster(push), PeerPrincipalFromFilterState: true})
	// per chain: CUSTOM authorization, JWT, then local authorization
	policy := func(svc *model.Service) ([]*hcm.HttpFilter, []*listenerv3.Filter) {
		authzPolicies := waypointPolicies(push, kind.AuthorizationPolicy, proxy, svc)
		jwt := authn.JwtFilter(waypointPolicies(push, kind.RequestAuthentication, proxy, svc),
			authn.JWTOptions{Resolver: g.JWKS, ClearRouteCache: true})
		h, t := b.BuildHTTP(authzPolicies), b.BuildTCP(authzPolicies)
		logPolicyWarnings(proxy, append(h.Warnings, t.Warnings...))
		return h.With(jwt), t.All()
	}
	o.DirectHTTPPolicy, o.DirectTCPPolicy = policy(nil)
	for _, svc := range svcs {
		httpPolicy, tcpPolicy := policy(svc)
		out = append(out, waypoint.Service{
			Service:         svc,
			DestinationRule: destinationRule(push, proxy, svc).Rule(),
			VIPs:            serviceVIPs(svc, proxy, push.UsesAllocatedAddresses(proxy)),
			VirtualServices: waypointVirtualServices(sc.VirtualServices(), proxy.ConfigNamespace, svc),
			HTTPPolicy:      httpPolicy,
			TCPPolicy:       tcpPolicy,
		})
	}
	if ns, name := waypointKey(proxy); g.Source != nil && name != "" {
		for _, w := range g.Source.WorkloadsForWaypoint(ns, name) {
			for _, a := range w.Addresses {
				if ip, ok := netip.AddrFromSlice(a); ok {
					o.Workloads = append(o.Workloads, ip)
				}
			}
		}
	}
	return out, o
}

// serviceVIPs are the addresses the waypoint matches a service on: its
// VIPs in the proxy's cluster, else its allocated addresses (when it uses
// them).
func serviceVIPs(svc *model.Service, proxy *model.Proxy, allocated bool) []string {
	// a single-stack waypoint matches the addresses of its family only, as
	// Istio's GetAllAddressesForProxy filters them
	mode := proxy.IPMode()
	var out []string
	for _, a := range svc.AddressesForProxy(proxy.ClusterID(), mode) {
		if ip, err := netip.ParseAddr(a); err == nil && !ip.IsUnspecified() {
			out = append(out, a)
		}
	}
	if len(out) == 0 && allocated {
		if a := svc.AutoAllocatedIPv4Address; a != "" && mode != model.IPv6 {
			out = append(out, a)
		}
		if a := svc.AutoAllocatedIPv6Address; a != "" && mode != model.IPv4 {
			out = append(out, a)
		}
	}
	return out
}

// waypointVirtualServices are the VirtualServices of the scope whose hosts
// match the service, from the waypoint's or the service's namespace (the
// only ones a waypoint takes routes from), in the scope's order.
func waypointVirtualServices(all []*config.Config, waypointNS string, svc *model.Service) []*config.Config {
	var out []*config.Config
	for _, vs := range all {
		if vs.Namespace != waypointNS && vs.Namespace != svc.Attributes.Namespace {
			continue
		}
		for _, h := range virtualServiceHosts(vs) {
			if model.HostMatches(h, svc.Hostname) {
				out = append(out, vs)
				break
			}
		}
	}
	return out
}

// dnsEndpointView is what a waypoint sees of the inline endpoints of a DNS
// service's inbound-vip clusters: as Istio builds them (its endpoint
// builder for a DNS cluster), through the network gateways as they are
// declared, hostnames unresolved (Envoy resolves the cluster's hosts), for
// a proxy that is not a sidecar.
func dnsEndpointView(push *model.PushContext, proxy *model.Proxy, svc *model.Service) cluster.EndpointView {
	v, _ := cluster.ViewFor(push, proxy, svc)
	if gws := push.UnresolvedNetworkGateways(); len(gws) > 0 {
		v.Gateways = model.NewNetworkGateways(gws)
		v.Network = proxyNetwork(proxy)
	} else {
		v.Gateways, v.Network = nil, ""
	}
	return v
}
