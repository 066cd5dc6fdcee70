package generators

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	dfpcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/dynamic_forward_proxy/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/envoyfilter"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pilot/pkg/security/authz"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// SidecarGenerators produce the CDS, EDS, LDS and RDS of sidecars from a
// PushContext, the service registries and the endpoint index.
type SidecarGenerators struct {
	Endpoints *model.EndpointIndex
	Discovery model.ServiceDiscovery
	// JWKS resolves the jwksUri of RequestAuthentications (nil: only inline
	// jwks are used; the others get a key set that accepts no token).
	JWKS authn.JwksResolver
	// Credentials are the certificates of gateway servers (nil: none are
	// served, and no server is left out for a missing one).
	Credentials CredentialSource
	// FilterGatewayClusters gives gateway proxies clusters only for the
	// services their routes reach (PILOT_FILTER_GATEWAY_CLUSTER_CONFIG).
	FilterGatewayClusters bool
	// SidecarIngressTLS lets a Sidecar ingress listener's tls terminate
	// TLS on its port (ENABLE_TLS_ON_SIDECAR_INGRESS; off, as in Istio:
	// the tls block is then ignored).
	SidecarIngressTLS bool
	// ProtocolFilters switch the Mongo, Redis and MySQL filters of TCP
	// chains, outbound and inbound (PILOT_ENABLE_MONGO_FILTER, on, and
	// PILOT_ENABLE_REDIS_FILTER and PILOT_ENABLE_MYSQL_FILTER, off, as in
	// Istio: the zero value).
	ProtocolFilters listener.ProtocolFilters
	// DualStack is ISTIO_DUAL_STACK: the virtual listeners, inbound
	// clusters and DNS clusters of a dual-stack proxy take both IP
	// families (off, as in Istio).
	DualStack bool
	// IPv4OutboundForIPv6 is ISTIO_ENABLE_IPV4_OUTBOUND_LISTENER_FOR_IPV6_CLUSTERS:
	// an IPv6-only proxy's virtualOutbound also listens on 0.0.0.0 and its
	// DNS clusters resolve both families (off, as in Istio).
	IPv4OutboundForIPv6 bool

	cache snapshotCache[cacheKey]
	eds   snapshotCache[edsKey]

	// clusterCache and listenerCache hold the outbound clusters and
	// listeners of sidecars: apart from the cache, because their entries
	// outlive snapshots (carryClusters, carryListeners)
	clusterCache  snapshotCache[cacheKey]
	listenerCache snapshotCache[cacheKey]
	// vhosts are the encoded virtual hosts sidecar route configurations
	// are assembled from; fullRoutes builds every configuration whole
	// instead (tests and benchmarks compare the two)
	vhosts     vhostCache
	fullRoutes bool

	// slots bound the builds of all the caches above at once
	slots buildSlots
	// enc keeps the encodings of the resources made for the server the
	// generators are registered on (nil: none kept)
	enc *xds.Encodings

	sec   atomic.Pointer[snapshotSecurity]
	rl    atomic.Pointer[routeLabels]
	ef    envoyfilter.Compiler
	efLog patchProblems
}

// Register installs the sidecar generators as the defaults.
func (g *SidecarGenerators) Register(s *xds.DiscoveryServer) {
	g.enc = s.Encodings()
	s.RegisterGenerator(xds.ClusterType, xds.GeneratorFunc(g.clusters))
	s.RegisterGenerator(xds.EndpointType, xds.GeneratorFunc(g.endpoints))
	s.RegisterGenerator(xds.ListenerType, xds.GeneratorFunc(g.listeners))
	s.RegisterGenerator(xds.RouteType, xds.GeneratorFunc(g.routes))
}

// serviceAccounts are the identities of a service's endpoints.
func (g *SidecarGenerators) serviceAccounts(svc *model.Service) []string {
	if g.Endpoints == nil {
		return nil
	}
	shards, ok := g.Endpoints.ShardsFor(svc.Hostname, svc.Attributes.Namespace)
	if !ok {
		return nil
	}
	return shards.ServiceAccounts()
}

// sdsSockets are the proxy's "credential" and "file-credential" node
// metadata: SDS servers of its own for sds:// credentials and for the
// certificate files of SIMPLE and MUTUAL rules.
func sdsSockets(proxy *model.Proxy) (credential, file bool) {
	if proxy.Metadata == nil {
		return false, false
	}
	return proxy.Metadata.Raw["credential"] == "true", proxy.Metadata.Raw["file-credential"] == "true"
}

// sdsSocketsKey sets apart in cache keys the clusters of proxies with such
// servers ("" for the others, whose keys stay as they were).
func sdsSocketsKey(proxy *model.Proxy) string {
	cred, file := sdsSockets(proxy)
	if !cred && !file {
		return ""
	}
	return fmt.Sprintf("|sds:%t,%t", cred, file)
}

// destinationRule is the rule the proxy uses for outbound traffic to svc,
// as its sidecar scope picks it: a rule of the proxy's namespace whose
// workloadSelector selects the proxy, else the rule without a selector.
// The pointer identifies the rule within the snapshot (cache keys use it).
func destinationRule(push *model.PushContext, proxy *model.Proxy, svc *model.Service) *model.ConsolidatedDestRule {
	return push.SidecarScope(proxy).DestinationRule(proxy, svc.Hostname)
}

// proxyTargets are the proxy's own ports that services target, by port.
func (g *SidecarGenerators) proxyTargets(proxy *model.Proxy) []listener.InboundTarget {
	if g.Discovery == nil {
		return nil
	}
	q := &model.ProxyQuery{ID: proxy.ID, IPAddresses: proxy.IPAddresses, Labels: proxy.Labels, Namespace: proxy.ConfigNamespace}
	byPort := map[int]*listener.InboundTarget{}
	for _, t := range g.Discovery.GetProxyServiceTargets(q) {
		port := int(t.Port.TargetPort)
		if port == 0 {
			port = t.Port.Port.Port
		}
		it := byPort[port]
		if it == nil {
			it = &listener.InboundTarget{Port: port, Protocol: t.Port.Port.Protocol, ServicePort: t.Port.Port.Port}
			byPort[port] = it
		}
		it.Services = append(it.Services, t.Service)
		if t.Port.Port.Protocol != it.Protocol {
			// services disagree on the port's protocol: let the proxy sniff
			it.Protocol = protocol.Unsupported
		}
	}
	out := make([]listener.InboundTarget, 0, len(byPort))
	for _, it := range byPort {
		sort.SliceStable(it.Services, func(i, j int) bool { return it.Services[i].Hostname < it.Services[j].Hostname })
		out = append(out, *it)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out
}

func (g *SidecarGenerators) clusters(proxy *model.Proxy, _ *xds.WatchedResource, req *model.PushRequest) (xds.Generated, error) {
	push := req.Push
	ps := g.ef.Patches(push, proxy)
	if proxy.Type == model.Router {
		return g.routerClusters(proxy, push, ps), nil
	}
	m := push.Mesh
	var res xds.Generated
	for _, svc := range push.ServicesForProxy(proxy) {
		svc := svc
		// a service's outbound clusters depend on the proxy only through the
		// destination rule it uses (and the EnvoyFilters that patch them)
		// and its IP mode (the family DNS clusters resolve), and on the
		// service's endpoints (auto mTLS, service accounts) only through
		// the endpoint index version
		dr := destinationRule(push, proxy, svc)
		// DNS clusters carry endpoints, which depend on the proxy's
		// cluster (cluster-local hosts) and network view (cluster.ViewFor)
		_, viewKey := cluster.ViewFor(push, proxy, svc)
		key := cacheKey{typeURL: xds.ClusterType, rule: dr, name: svc.Key() + "|" + proxy.IPMode().String() + sdsSocketsKey(proxy) + viewKey, patches: ps.Key()}
		res.Append(g.clusterCache.getCarried(&g.slots, push, key, g.endpointsVersion(svc), carryClusters, func() xds.Generated {
			return g.outboundClusters(push, proxy, svc, dr, ps)
		}))
	}
	inPassthrough := cluster.BuildInboundPassthrough(m)
	cluster.ApplyInboundPassthroughFamily(inPassthrough, proxy.IPMode())
	out := []*clusterCfg{cluster.BuildBlackHole(m), cluster.BuildPassthrough(m)}
	if cache := g.dynamicDNSCache(push, proxy); cache != nil {
		out = append(out, cluster.BuildAllowAnyDynamicDNS(m, cache))
	}
	out = append(out, inPassthrough)
	sc := push.SidecarScope(proxy)
	inboundHosts := map[string][]string{}
	for _, t := range g.inboundTargets(push, proxy) {
		for _, svc := range t.Services {
			name := cluster.SubsetKey(cluster.Inbound, "", "", t.Port)
			inboundHosts[name] = append(inboundHosts[name], svc.Hostname)
		}
		c := cluster.BuildInbound(t.Port, t.Protocol, t.Services, m)
		if len(t.Services) > 0 {
			// the connection pool of the first service's rule bounds the
			// server side too
			cluster.ApplyInboundPolicy(c, destinationRule(push, proxy, t.Services[0]).Rule(), t.ServicePort, t.Protocol, m)
		}
		// the Sidecar's own connection pool wins over the rule's
		cluster.ApplyInboundConnectionPool(c, sc.InboundConnectionPool(t.Port), t.Protocol, m)
		if t.Endpoint != "" {
			cluster.ApplyInboundEndpoint(c, t.Endpoint, t.EndpointPort)
		}
		cluster.ApplyInboundFamily(c, proxy.IPMode(), g.DualStack)
		out = append(out, c)
	}
	out = g.patchClusters(push, proxy, ps, envoyfilter.PatchContext{SkipAdds: true, InboundClusterHosts: inboundHosts}, out)
	res.Append(toResources(g.enc, xds.ClusterType, out, func(c *clusterCfg) string { return c.Name }))
	res.Append(g.addedClusters(push, proxy, ps, res))
	return res, nil
}

// kindsKeepingClusters are the kinds whose changes leave every outbound
// cluster of a sidecar as it was: clusters are built from the service, its
// endpoints, the destination rule, PeerAuthentication, EnvoyFilters and the
// mesh configuration, never from routes, gateways, request policies or
// telemetry. (Which clusters a proxy gets may still change with them: the
// generator asks for each service again; only the building is saved.)
var kindsKeepingClusters = []kind.Kind{kind.VirtualService, kind.Gateway, kind.AuthorizationPolicy,
	kind.RequestAuthentication, kind.Telemetry, kind.WasmPlugin}

// carryClusters lets a snapshot reuse the outbound clusters built under the
// one before when only kindsKeepingClusters changed in between. Istio
// keeps its cluster cache entries across such pushes too; without this a
// VirtualService edit rebuilds every cluster of the mesh once. The cache
// key still carries the rule (a rebuilt destination rule index gives new
// rules, so a miss), the service and the patches, and the entry the
// endpoint version.
func carryClusters(push *model.PushContext, prevSeq uint64) bool {
	return push.ChangedOnlySince(prevSeq, kindsKeepingClusters)
}

// carryListeners lets a snapshot reuse the outbound listeners of the one
// before when only VirtualServices changed in between: a listener reads
// VirtualServices only for their tcp and tls routes, which its key names
// (listenerRoutesKey). Everything else it reads (services, rules,
// Telemetry, EnvoyFilters, PeerAuthentication, the mesh) is left out.
func carryListeners(push *model.PushContext, prevSeq uint64) bool {
	return push.ChangedOnlySince(prevSeq, []kind.Kind{kind.VirtualService, kind.Gateway})
}

// listenerRoutesKey names the VirtualServices with tcp or tls routes a
// proxy's outbound listeners read, by namespace, name and resourceVersion,
// in order. It pins the listeners to the snapshot (never carried) for a
// scope from a Sidecar, for a scope with a passthrough (headless) service,
// and when a VirtualService has no resourceVersion to tell its versions
// apart.
func listenerRoutesKey(push *model.PushContext, proxy *model.Proxy, opts listener.Options) string {
	pinned := "seq=" + strconv.FormatUint(push.Seq(), 10)
	sc := push.SidecarScope(proxy)
	if sc.Sidecar != nil {
		return pinned
	}
	for _, svc := range sc.Services() {
		if svc.Resolution == model.Passthrough {
			// a headless service's listeners follow its endpoints as of
			// each full push (headlessInstances): built afresh each time
			return pinned
		}
	}
	var b strings.Builder
	add := func(vss []*config.Config) bool {
		for _, vs := range vss {
			spec, ok := vs.Spec.(*networking.VirtualService)
			if !ok || !model.HasL4Routes(spec) {
				continue
			}
			if vs.ResourceVersion == "" {
				return false
			}
			b.WriteString(vs.Namespace + "/" + vs.Name + "@" + vs.ResourceVersion + ",")
		}
		return true
	}
	if !add(opts.VirtualServices) {
		return pinned
	}
	for _, e := range opts.Egress {
		b.WriteByte(';')
		if !add(e.VirtualServices) {
			return pinned
		}
	}
	return b.String()
}

// outboundClusters are the outbound clusters of one service under the
// destination rule a proxy uses for it.
func (g *SidecarGenerators) outboundClusters(push *model.PushContext, proxy *model.Proxy, svc *model.Service, dr *model.ConsolidatedDestRule, ps *envoyfilter.Patches) xds.Generated {
	opts := cluster.Options{Mesh: push.Mesh, DestinationRule: dr.Rule(), ServiceAccounts: g.serviceAccounts(svc), Router: proxy.Type == model.Router,
		PeerDisabled: authn.DestinationMode(push, push.RootNamespace(), svc.Attributes.Namespace) == authn.ModeDisable,
		DualStack:    g.DualStack, IPv4ForIPv6: g.IPv4OutboundForIPv6, RedisMaglev: g.ProtocolFilters.Redis,
		IPMode: proxy.IPMode(), Endpoints: func(p *model.Port) []*model.IstioEndpoint {
			eps, _ := g.orderedEndpoints(svc)
			return portEndpoints(eps, p)
		}}
	opts.View, _ = cluster.ViewFor(push, proxy, svc)
	opts.CredentialSocket, opts.FileCredentialSocket = sdsSockets(proxy)
	cs := g.patchClusters(push, proxy, ps, envoyfilter.PatchContext{SkipAdds: true}, cluster.BuildOutbound(svc, opts))
	return toResources(g.enc, xds.ClusterType, cs, func(c *clusterCfg) string { return c.Name })
}

// allowAny tells whether the proxy may reach unknown destinations: its
// Sidecar's outboundTrafficPolicy, else the mesh's.
func allowAny(push *model.PushContext, proxy *model.Proxy) bool {
	if p := push.SidecarScope(proxy).OutboundTrafficPolicy; p != nil {
		return p.GetMode() != networking.OutboundTrafficPolicy_REGISTRY_ONLY
	}
	return push.Mesh.GetOutboundTrafficPolicy().GetMode() != meshconfig.MeshConfig_OutboundTrafficPolicy_REGISTRY_ONLY
}

// allowAnyDynamicDNS tells whether a sidecar's outbound policy (its
// Sidecar's, else the mesh's) is ALLOW_ANY_DYNAMIC_DNS; gateways never are.
func allowAnyDynamicDNS(push *model.PushContext, proxy *model.Proxy) bool {
	if proxy.Type != model.SidecarProxy {
		return false
	}
	mode := meshconfig.MeshConfig_OutboundTrafficPolicy_Mode(push.Mesh.GetOutboundTrafficPolicy().GetMode())
	if p := push.SidecarScope(proxy).OutboundTrafficPolicy; p != nil {
		mode = meshconfig.MeshConfig_OutboundTrafficPolicy_Mode(p.GetMode())
	}
	return mode == meshconfig.MeshConfig_OutboundTrafficPolicy_ALLOW_ANY_DYNAMIC_DNS
}

// dynamicDNSCache is the DNS cache of a sidecar under
// ALLOW_ANY_DYNAMIC_DNS (nil otherwise): the family of the proxy's
// addresses, and the agent's DNS proxy when the proxy captures DNS.
func (g *SidecarGenerators) dynamicDNSCache(push *model.PushContext, proxy *model.Proxy) *dfpcommonv3.DnsCacheConfig {
	if !allowAnyDynamicDNS(push, proxy) {
		return nil
	}
	var dns cluster.DNSCapture
	if proxy.Metadata != nil {
		dns.Capture, _ = strconv.ParseBool(proxy.Metadata.DNSCapture)
		dns.ProxyAddr, _ = proxy.Metadata.Raw["DNS_PROXY_ADDR"].(string)
	}
	return cluster.AllowAnyDNSCache(cluster.DNSLookupFamily(proxy.IPMode(), g.DualStack, g.IPv4OutboundForIPv6), dns)
}

func (g *SidecarGenerators) listeners(proxy *model.Proxy, _ *xds.WatchedResource, req *model.PushRequest) (xds.Generated, error) {
	push := req.Push
	if proxy.Type == model.Router {
		return g.routerListeners(proxy, push), nil
	}
	tp := telemetryProxy(proxy)
	opts := listener.Options{AllowAny: allowAny(push, proxy), Inbound: g.listenerTargets(push, proxy, g.inboundTargets(push, proxy)),
		AccessLogFile: push.Mesh.GetAccessLogFile(), AccessLogFormat: push.Mesh.GetAccessLogFormat(),
		Tracing: telemetry.Tracing(push.Mesh, tp), TrustDomain: push.Mesh.GetTrustDomain(),
		MTLS: authn.ProxyMTLS(push.PeerAuthentications(proxy), authn.MTLSOptions{RootNamespace: push.RootNamespace()}),
		TLS:  g.inboundTLS(push), InboundHTTPPolicy: g.inboundHTTPPolicy(push, proxy),
		InboundTCPPolicy: g.inboundTCPPolicy(push, proxy)}
	opts.DynamicDNSCache = g.dynamicDNSCache(push, proxy)
	opts.DNSLookupFamily = cluster.DNSLookupFamily(proxy.IPMode(), g.DualStack, g.IPv4OutboundForIPv6)
	opts.NoRedirect = noRedirect(proxy)
	opts.Transparent = proxy.Interception() == model.InterceptionTproxy
	opts.Wildcards, opts.DualStack, opts.IPv4OutboundForIPv6 = wildcards(proxy), g.DualStack, g.IPv4OutboundForIPv6
	opts.ConnectionSettings = listener.ResolveConnectionSettings(proxy.ProxyConfigOrDefault(push.Mesh.GetDefaultConfig()), push.Mesh.GetDefaultConfig(), false)
	opts.ProtocolDetectionTimeout = push.Mesh.GetProtocolDetectionTimeout()
	opts.Instances, opts.SelfIP = g.headlessInstances, headlessSelf(proxy, opts.Inbound)
	opts.Egress = egressListeners(push.SidecarScope(proxy), proxy)
	opts.VirtualServices, opts.TCP = push.SidecarScope(proxy).VirtualServices(), tcpRouting(push, proxy)
	opts.TCP.Protocols = g.ProtocolFilters
	// the addresses of services' listeners follow the proxy's cluster and
	// IP mode; the server names of TLS ports its DNS domain
	clusterID, ipMode := proxy.ClusterID(), proxy.IPMode()
	autoAllocated := push.UsesAllocatedAddresses(proxy)
	opts.Addresses = func(svc *model.Service) []string { return svc.ProxyAddresses(clusterID, ipMode, autoAllocated) }
	opts.DNSDomain = proxy.DNSDomain
	idle := proxyIdleTimeout(proxy)
	opts.IdleTimeout = listener.ParseIdleTimeout(idle)
	canBind := bindChecker(proxy, []int{int(push.Mesh.GetProxyListenPort()), int(push.Mesh.GetProxyInboundListenPort())})
	opts.CanBind = func(bindToPort bool, bind string, port int, p protocol.Instance) bool {
		if canBind(bindToPort, bind, port, p) {
			return true
		}
		msg := fmt.Sprintf("no outbound listener on port %d: it is privileged or a static or capture listener's", port)
		genLog.Warnf("%s: %s", proxy.ID, msg)
		push.AddMetric(model.MetricSidecarPortSkipped, proxy.ID+"|"+strconv.Itoa(port), proxy.ID, msg)
		return false
	}
	tel := telemetry.Compute(push.Telemetry(proxy), push.Mesh)
	opts.TelemetryIn = listenerTelemetry(push, proxy, tel, telemetry.SidecarInbound)
	opts.TelemetryOut = listenerTelemetry(push, proxy, tel, telemetry.SidecarOutbound)
	ps := g.ef.Patches(push, proxy)
	// outbound listeners depend on the proxy only through the services its
	// sidecar scope sees, what its tracing tags say, its Telemetry and the
	// EnvoyFilters that patch them, its interception and IP modes (capture
	// listeners and wildcards) and where it may bind (egressKey), and its
	// address when it is an endpoint of a headless service. Their TCP
	// chains also follow the VirtualServices and DestinationRules the
	// scope imports: the cache lives for one snapshot, so within it the
	// scope fixes which objects those are and what they say; what is left
	// of the proxy is its namespace (sourceNamespace) and the labels tcp
	// and tls sourceLabels and DestinationRule workload selectors pick,
	// which is exactly what routeScope adds to the scope. Their TCP proxies
	// and HTTP connection managers also take the proxy's IDLE_TIMEOUT; the
	// addresses of services' listeners its cluster (a Kubernetes service's
	// VIPs there), and the server names of TLS ports its DNS domain (the
	// short names of ExternalName aliases); whether it captures DNS the
	// addresses allocated to ServiceEntries it listens on.
	key := cacheKey{typeURL: xds.ListenerType, namespace: g.routeScope(push, proxy),
		name: tp.Key() + "|" + tel.Key() + "|" + proxy.ServiceCluster + "|" + egressKey(proxy) + "|" + opts.SelfIP + "|" + idle +
			"|" + clusterID + "|" + proxy.DNSDomain + "|" + strconv.FormatBool(autoAllocated),
		patches: ps.Key()}
	// their HTTP connection managers also follow the proxy's resolved
	// connectionSettings (its PROXY_CONFIG, else the mesh's defaultConfig)
	key.name += "|" + listener.ConnectionSettingsKey(opts.ConnectionSettings)
	// Across snapshots (carryListeners) the VirtualServices are named by
	// what they are: those with tcp or tls routes, by resourceVersion (no
	// other VirtualService changes a listener); a scope from a Sidecar,
	// whose services a VirtualService may import, keeps its listeners to
	// its own snapshot.
	key.name += "|" + listenerRoutesKey(push, proxy, opts)
	if opts.DynamicDNSCache != nil {
		// the forward proxy's DNS cache follows the proxy's DNS capture
		key.name += "|dfp=" + opts.DynamicDNSCache.GetDnsLookupFamily().String()
		if r := opts.DynamicDNSCache.GetTypedDnsResolverConfig(); r != nil {
			key.name += "," + string(r.GetTypedConfig().GetValue())
		}
	}
	outbound := g.listenerCache.getCarried(&g.slots, push, key, 0, carryListeners, func() xds.Generated {
		ls := g.patchListeners(push, proxy, ps, envoyfilter.PatchContext{SkipAdds: true}, listener.BuildOutbound(listenerServices(push.SidecarScope(proxy)), opts))
		return toResources(g.enc, xds.ListenerType, ls, listenerName)
	})
	inbound := g.patchListeners(push, proxy, ps, envoyfilter.PatchContext{SkipAdds: true}, withoutNames(push, proxy, listener.BuildInboundListeners(opts), outbound))
	out := toResources(g.enc, xds.ListenerType, inbound, listenerName)
	out.Append(outbound)
	out.Append(g.addedListeners(push, proxy, ps, out))
	sort.Slice(out.Resources, func(i, j int) bool { return out.Resources[i].Name < out.Resources[j].Name })
	return out, nil
}

func listenerName(l *listenerCfg) string { return l.Name }

// proxyIdleTimeout is the proxy's IDLE_TIMEOUT metadata as sent ("": none).
func proxyIdleTimeout(proxy *model.Proxy) string {
	if proxy.Metadata == nil {
		return ""
	}
	return proxy.Metadata.IdleTimeout
}

// tcpRouting is what the proxy's outbound TCP chains need to apply tcp
// routes, source-IP hashing and the mesh's outboundClusterStatName: its
// labels and namespace, and the services and DestinationRules its scope
// resolves hosts to.
func tcpRouting(push *model.PushContext, proxy *model.Proxy) listener.TCPRouting {
	sc := push.SidecarScope(proxy)
	return listener.TCPRouting{Labels: proxy.Labels, Namespace: proxy.ConfigNamespace, StatName: push.Mesh.GetOutboundClusterStatName(),
		LookupService:   func(h string) *model.Service { return push.ServiceForHostname(proxy, h) },
		DestinationRule: func(h string) *networking.DestinationRule { return sc.DestinationRule(proxy, h).Spec() }}
}

// listenerServices are the services that get outbound listeners: those
// the scope's egress listeners import, not the destinations only its
// VirtualServices add (those get clusters and routes, as in Istio).
func listenerServices(sc *model.SidecarScope) []*model.Service {
	if len(sc.EgressListeners) == 1 {
		return sc.EgressListeners[0].Services()
	}
	var out []*model.Service
	for _, l := range sc.EgressListeners {
		out = append(out, l.Services()...)
	}
	return out
}

// withoutNames leaves out the inbound listeners named like an outbound one
// (a Sidecar whose ingress and egress listeners bind the same address and
// port). Istio sends both and Envoy rejects the whole update, keeping
// every listener stale; the outbound one, first in Istio's order, is kept
// here so the rest of the update goes through.
func withoutNames(push *model.PushContext, proxy *model.Proxy, ls []*listenerCfg, taken xds.Generated) []*listenerCfg {
	names := make(map[string]bool, len(taken.Resources))
	for _, r := range taken.Resources {
		names[r.Name] = true
	}
	out := ls[:0]
	for _, l := range ls {
		if names[l.Name] {
			msg := "inbound listener " + l.Name + " left out: an outbound listener has the same address and port"
			genLog.Warnf("%s: %s", proxy.ID, msg)
			push.AddMetric(model.MetricConflictInboundListener, proxy.ID+"|"+l.Name, proxy.ID, msg)
			continue
		}
		out = append(out, l)
	}
	return out
}

func (g *SidecarGenerators) routes(proxy *model.Proxy, w *xds.WatchedResource, req *model.PushRequest) (xds.Generated, error) {
	push := req.Push
	names := w.Names()
	sort.Strings(names)
	ps := g.ef.Patches(push, proxy)
	if proxy.Type == model.Router {
		return g.routerRoutes(proxy, push, names, ps), nil
	}
	// the route configuration of a port depends on the proxy only through
	// its scope, namespace and the labels routes select on, and through
	// what picks the service addresses among its domains (cluster, IP
	// mode, DNS capture): sidecars that agree on those share one copy
	scope := g.routeScope(push, proxy)
	addressing := "|" + proxy.ClusterID() + "|" + strconv.Itoa(int(proxy.IPMode())) + "|" + strconv.FormatBool(push.UsesAllocatedAddresses(proxy))
	var byPort map[int][]route.ServiceRoutes
	var out xds.Generated
	for _, n := range names {
		port, host, ok := egressRouteKind(n)
		if !ok {
			continue
		}
		key := cacheKey{typeURL: xds.RouteType, namespace: scope, name: n + addressing, patches: ps.Key()}
		out.Append(g.cache.get(&g.slots, push, key, 0, func() xds.Generated {
			opts := sidecarRouteOptions(push, proxy)
			from := egressListenerForRoutes(push.SidecarScope(proxy), port, n)
			var rc *routeCfg
			switch {
			case host != "":
				opts.LookupService = nil // see onePortLookup
				rc = sniffedRoutes(n, host, port, from, vsByHostFor(push, proxy), opts)
			case port == 0 || isHTTPProxy(from):
				rc = portlessRoutes(n, from, vsByHostFor(push, proxy), opts)
			default:
				if byPort == nil {
					byPort = routesByPort(push, proxy)
				}
				opts.LookupService = nil // see onePortLookup
				srs := append(append([]route.ServiceRoutes(nil), byPort[port]...), virtualServiceOnlyHosts(from, port)...)
				if ps.Empty() && !g.fullRoutes {
					// assembled from virtual hosts shared across scopes
					// and snapshots (routes_incremental.go)
					if res, ok := g.assembledRoutes(push, proxy, key, port, srs, opts); ok {
						return res
					}
				}
				rc = route.BuildRouteConfiguration(port, srs, opts)
			}
			rcs := g.patchRoutes(push, proxy, ps, envoyfilter.PatchContext{}, []*routeCfg{rc})
			return toResources(g.enc, xds.RouteType, rcs, func(r *routeCfg) string { return r.Name })
		}))
	}
	return out, nil
}

// onePortLookup: the routes of one port of a sidecar (a numbered port,
// or a sniffed service's "<host>:<port>") look a destination's service up
// among the services of that port only, each with that port alone (Istio's
// BuildSidecarOutboundVirtualHosts builds servicesByName so, and
// GetDestinationCluster reads it): a destination without a port gets the
// route's port, whatever ports its service has. No lookup gives the same
// (route.DestinationPort). Only the portless routes (HTTP_PROXY, Unix
// sockets) see whole services.

// sidecarRouteOptions are the inputs of a sidecar's outbound routes.
func sidecarRouteOptions(push *model.PushContext, proxy *model.Proxy) route.Options {
	opts := route.Options{ProxyNamespace: proxy.ConfigNamespace, DomainSuffix: push.DomainSuffix(), AllowAny: allowAny(push, proxy),
		AllowAnyDynamicDNS: allowAnyDynamicDNS(push, proxy),
		ProxyLabels:        proxy.Labels, Gateway: "mesh",
		LookupService: func(h string) *model.Service { return push.ServiceForHostname(proxy, h) },
		ClusterID:     proxy.ClusterID(), IPMode: proxy.IPMode(), AutoAllocated: push.UsesAllocatedAddresses(proxy)}
	withHashes(&opts, push, proxy)
	return opts
}

// routesByPort pairs the HTTP and sniffed (no declared protocol) services
// the proxy sees, per port, with the VirtualService that applies to each:
// Istio routes both through the port's routes.
func routesByPort(push *model.PushContext, proxy *model.Proxy) map[int][]route.ServiceRoutes {
	vsByHost := vsByHostFor(push, proxy)
	byPort := map[int][]route.ServiceRoutes{}
	for _, svc := range push.ServicesForProxy(proxy) {
		for _, p := range svc.Ports {
			if p.Protocol.IsHTTP() || p.Protocol.IsUnsupported() {
				byPort[p.Port] = append(byPort[p.Port], route.ServiceRoutes{Service: svc, VirtualService: vsByHost[svc.Hostname]})
			}
		}
	}
	restrictToEgressListeners(push.SidecarScope(proxy), byPort)
	return byPort
}

// vsByHostFor is the mesh VirtualService of each host the proxy's
// namespace sees (the first one wins).
func vsByHostFor(push *model.PushContext, proxy *model.Proxy) map[string]*config.Config {
	vsByHost := map[string]*config.Config{}
	vss := push.VirtualServicesForGateway(proxy.ConfigNamespace, "mesh")
	for i := range vss {
		for _, h := range virtualServiceHosts(&vss[i]) {
			if _, taken := vsByHost[h]; !taken {
				vsByHost[h] = &vss[i]
			}
		}
	}
	return vsByHost
}

// restrictToEgressListeners keeps, in the routes of each port, only the
// services of the egress listener Istio builds that port's routes from:
// the first listener on the port, else the catch-all listener. Without a
// listener on a port nothing changes: the catch-all sees every service.
func restrictToEgressListeners(sc *model.SidecarScope, byPort map[int][]route.ServiceRoutes) {
	byListenerPort := map[int]*model.EgressListener{}
	var catchAll *model.EgressListener
	for _, l := range sc.EgressListeners {
		if l.Listener.GetPort() == nil {
			if catchAll == nil {
				catchAll = l
			}
			continue
		}
		if n := int(l.Listener.GetPort().GetNumber()); byListenerPort[n] == nil {
			byListenerPort[n] = l
		}
	}
	if len(byListenerPort) == 0 {
		return
	}
	for port, srs := range byPort {
		from := byListenerPort[port]
		if from == nil {
			from = catchAll
		}
		hosts := map[string]bool{}
		if from != nil {
			for _, svc := range from.Services() {
				hosts[svc.Hostname] = true
			}
		}
		kept := srs[:0]
		for _, sr := range srs {
			if hosts[sr.Service.Hostname] {
				kept = append(kept, sr)
			}
		}
		byPort[port] = kept
	}
}

// scopeID names the proxy's sidecar scope: proxies with the same one see the
// same services.
func scopeID(push *model.PushContext, proxy *model.Proxy) string {
	sc := push.SidecarScope(proxy)
	return sc.Namespace + "/" + sc.Name
}

// telemetryProxy is what tracing tags say about a proxy.
func telemetryProxy(p *model.Proxy) telemetry.Proxy {
	out := telemetry.Proxy{Labels: p.Labels, Namespace: p.ConfigNamespace}
	if p.Metadata != nil {
		out.ClusterID, out.MeshID = p.Metadata.ClusterID, p.Metadata.MeshID
	}
	return out
}

// snapshotSecurity is what inbound policy needs of one snapshot, built
// once: the mesh's mTLS sockets and the authorization builder (trust
// domains, extension providers).
type snapshotSecurity struct {
	seq   uint64
	tls   authn.InboundTLS
	authz *authz.Builder
}

func (g *SidecarGenerators) security(push *model.PushContext) *snapshotSecurity {
	if cur := g.sec.Load(); cur != nil && cur.seq == push.Seq() {
		return cur
	}
	st := &snapshotSecurity{seq: push.Seq(), tls: authn.NewInboundTLS(authn.TLSOptionsFromMesh(push.Mesh)),
		authz: authz.New(authz.Options{Mesh: push.Mesh, LookupCluster: lookupCluster(push)})}
	if cur := g.sec.Load(); cur == nil || cur.seq < st.seq {
		g.sec.Store(st)
	}
	return st
}

// inboundTLS are the snapshot's inbound mTLS sockets.
func (g *SidecarGenerators) inboundTLS(push *model.PushContext) *authn.InboundTLS {
	return &g.security(push).tls
}

// lookupCluster resolves an extension provider's service ("<ns>/<host>"
// or a hostname) to its outbound cluster, as Istio does: unknown or
// ambiguous (one hostname in several namespaces) is an error.
func lookupCluster(push *model.PushContext) authz.ClusterLookup {
	return func(service string, port uint32) (string, string, error) {
		ns, host, scoped := strings.Cut(service, "/")
		if !scoped {
			host, ns = service, ""
		}
		var found *model.Service
		for _, svc := range push.ServicesForHostname(host) {
			if ns != "" && svc.Attributes.Namespace != ns {
				continue
			}
			if found != nil {
				return "", "", fmt.Errorf("service %s is ambiguous: it exists in namespaces %s and %s", service, found.Attributes.Namespace, svc.Attributes.Namespace)
			}
			found = svc
		}
		if found == nil {
			return "", "", fmt.Errorf("service %s not found", service)
		}
		return found.Hostname, cluster.SubsetKey(cluster.Outbound, "", found.Hostname, int(port)), nil
	}
}

// inboundHTTPPolicy are the policy filters of the proxy's inbound HTTP
// chains, in Istio's order: CUSTOM (ext_authz), the JWT filter of its
// RequestAuthentications, then AUDIT, DENY and ALLOW RBAC. A gateway's JWT
// providers clear the route cache (Istio's authn plugin passes
// clearRouteCache for every proxy but sidecars).
func (g *SidecarGenerators) inboundHTTPPolicy(push *model.PushContext, proxy *model.Proxy) []*hcm.HttpFilter {
	jwt := authn.JwtFilter(push.RequestAuthentications(proxy), authn.JWTOptions{Resolver: g.JWKS, ClearRouteCache: proxy.Type != model.SidecarProxy})
	h := g.security(push).authz.BuildHTTP(push.AuthorizationPolicies(proxy))
	logPolicyWarnings(proxy, h.Warnings)
	return h.With(jwt)
}

// inboundTCPPolicy are the authorization filters of the proxy's inbound TCP
// chains.
func (g *SidecarGenerators) inboundTCPPolicy(push *model.PushContext, proxy *model.Proxy) []*listenerv3.Filter {
	t := g.security(push).authz.BuildTCP(push.AuthorizationPolicies(proxy))
	logPolicyWarnings(proxy, t.Warnings)
	return t.All()
}

// logPolicyWarnings says what a policy lost in translation (an HTTP-only
// field on TCP, an invalid value).
func logPolicyWarnings(proxy *model.Proxy, ws []authz.Warning) {
	for _, w := range ws {
		genLog.Debugf("%s: %v", proxy.ID, w.Error())
	}
}

// withHashes gives route options the consistent hashes of the
// DestinationRules the proxy uses, and the mesh's default retry policy.
func withHashes(o *route.Options, push *model.PushContext, proxy *model.Proxy) {
	hashesFrom(o, routeRules(push, proxy))
	o.MeshRetry = push.Mesh.GetDefaultHttpRetryPolicy()
}

// hashesFrom gives route options the consistent hashes of the rules ruleOf
// finds.
func hashesFrom(o *route.Options, ruleOf func(host string) *networking.DestinationRule) {
	o.Hash = func(d *networking.Destination) *networking.LoadBalancerSettings_ConsistentHashLB {
		return route.DestinationHash(ruleOf(d.GetHost()), d)
	}
	o.ServiceHash = func(svc *model.Service, port int) *networking.LoadBalancerSettings_ConsistentHashLB {
		return route.ServiceHash(ruleOf(svc.Hostname), port)
	}
}

// routeRules finds the DestinationRule the proxy uses for a host, the one
// whose consistent hash its routes take (nil: none).
func routeRules(push *model.PushContext, proxy *model.Proxy) func(host string) *networking.DestinationRule {
	sc := push.SidecarScope(proxy)
	return func(host string) *networking.DestinationRule {
		if cfg := sc.DestinationRule(proxy, host).Rule(); cfg != nil {
			dr, _ := cfg.Spec.(*networking.DestinationRule)
			return dr
		}
		return nil
	}
}
