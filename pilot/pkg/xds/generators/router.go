package generators

import (
	"sort"

	"google.golang.org/protobuf/encoding/protojson"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/envoyfilter"
	"github.com/meshplane/istiod/pilot/pkg/networking/gateway"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config"
)

// Gateway proxies (node type "router") get what their Istio Gateways
// describe instead of a sidecar's config: listeners per server port,
// route configurations per server, and clusters for every service they
// see (no inbound, no passthrough).

// mergedGateway is the proxy's logical gateway in this snapshot.
func (g *SidecarGenerators) mergedGateway(push *model.PushContext, proxy *model.Proxy) *gateway.Merged {
	var targets []model.ServiceTarget
	if g.Discovery != nil {
		targets = g.Discovery.GetProxyServiceTargets(&model.ProxyQuery{ID: proxy.ID, IPAddresses: proxy.IPAddresses,
			Labels: proxy.Labels, Namespace: proxy.ConfigNamespace})
	}
	m := gateway.Merge(gateway.Select(push.GatewaysInScope(proxy), proxy, targets), proxy)
	for _, p := range m.Problems {
		genLog.Debugf("%s: %v", proxy.ID, p.Error())
	}
	return m
}

func (g *SidecarGenerators) routerClusters(proxy *model.Proxy, push *model.PushContext, ps *envoyfilter.Patches) xds.Generated {
	var res xds.Generated
	merged := g.mergedGateway(push, proxy)
	auto := merged.AutoPassthroughHosts
	services := push.ServicesForProxy(proxy)
	if g.FilterGatewayClusters && len(auto) == 0 {
		services = referencedServices(push, proxy, merged, services)
	}
	mode := proxy.IPMode()
	for _, svc := range services {
		svc := svc
		dr := destinationRule(push, proxy, svc)
		// not shared with sidecars: a router's clusters of ports without a
		// declared protocol do not follow the downstream's HTTP version.
		// Gateways of one deployment share them unless their IP modes
		// differ: DNS clusters resolve the proxy's family (V6_ONLY for an
		// IPv6-only gateway, ALL for a dual-stack one under ISTIO_DUAL_STACK)
		// The endpoint version keys what the clusters read of the
		// endpoints (auto mTLS, service accounts), as for sidecars.
		view, viewKey := cluster.ViewFor(push, proxy, svc)
		key := cacheKey{typeURL: xds.ClusterType, rule: dr, name: "router|" + svc.Key() + "|" + mode.String() + sdsSocketsKey(proxy) + viewKey, patches: ps.Key()}
		version := g.endpointsVersion(svc)
		res.Append(g.cache.get(&g.slots, push, key, version, func() xds.Generated { return g.outboundClusters(push, proxy, svc, dr, ps) }))
		// every service of the scope once any server is AUTO_PASSTHROUGH
		// (Istio's buildOutboundSniDnatClusters)
		if len(auto) > 0 {
			key.name = "sni-dnat|" + svc.Key() + "|" + mode.String() + viewKey
			res.Append(g.cache.get(&g.slots, push, key, version, func() xds.Generated {
				opts := cluster.Options{Mesh: push.Mesh, DestinationRule: dr.Rule(), Endpoints: func(p *model.Port) []*model.IstioEndpoint {
					eps, _ := g.orderedEndpoints(svc)
					return portEndpoints(eps, p)
				}, IPMode: mode, DualStack: g.DualStack, IPv4ForIPv6: g.IPv4OutboundForIPv6, RedisMaglev: g.ProtocolFilters.Redis, View: view}
				cs := g.patchClusters(push, proxy, ps, envoyfilter.PatchContext{SkipAdds: true}, cluster.BuildSNIDNAT(svc, opts))
				return toResources(g.enc, xds.ClusterType, cs, func(c *clusterCfg) string { return c.Name })
			}))
		}
	}
	bh := g.patchClusters(push, proxy, ps, envoyfilter.PatchContext{SkipAdds: true}, []*clusterCfg{cluster.BuildBlackHole(push.Mesh)})
	res.Append(toResources(g.enc, xds.ClusterType, bh, func(c *clusterCfg) string { return c.Name }))
	res.Append(g.addedClusters(push, proxy, ps, res))
	return res
}

// routerListeners are built for each gateway proxy, never cached: besides
// its merged gateway they follow the proxy's IDLE_TIMEOUT (TCP proxies and
// connection managers), IP mode (wildcard and additional addresses), its
// PROXY_CONFIG and certificates, so two gateways of one deployment may
// differ in them.
func (g *SidecarGenerators) routerListeners(proxy *model.Proxy, push *model.PushContext) xds.Generated {
	var left []string
	opts := g.gatewayListenerOptions(proxy, push, &left)
	ls := g.patchListeners(push, proxy, g.ef.Patches(push, proxy), envoyfilter.PatchContext{}, listener.BuildGateway(opts))
	recordGatewayProblems(push, proxy, opts.Merged, left)
	out := toResources(g.enc, xds.ListenerType, ls, listenerName)
	sort.Slice(out.Resources, func(i, j int) bool { return out.Resources[i].Name < out.Resources[j].Name })
	return out
}

// gatewayListenerOptions are the inputs of the proxy's gateway listeners;
// problems (may be nil) collects what they leave out.
func (g *SidecarGenerators) gatewayListenerOptions(proxy *model.Proxy, push *model.PushContext, problems *[]string) listener.GatewayOptions {
	vsFor := virtualServicesFor(push, proxy)
	tel := telemetry.Compute(push.Telemetry(proxy), push.Mesh)
	// TCP and TLS routes resolve their destinations as a sidecar's
	// outbound TCP chains do, with the same protocol filter switches
	tcp := tcpRouting(push, proxy)
	tcp.Protocols = g.ProtocolFilters
	return listener.GatewayOptions{
		Options: listener.Options{AccessLogFile: push.Mesh.GetAccessLogFile(), AccessLogFormat: push.Mesh.GetAccessLogFormat(),
			Tracing: telemetry.Tracing(push.Mesh, telemetryProxy(proxy)), InboundHTTPPolicy: g.inboundHTTPPolicy(push, proxy),
			InboundTCPPolicy: g.inboundTCPPolicy(push, proxy), TelemetryOut: listenerTelemetry(push, proxy, tel, telemetry.Gateway),
			ConnectionSettings: listener.ResolveConnectionSettings(proxy.ProxyConfigOrDefault(push.Mesh.GetDefaultConfig()), push.Mesh.GetDefaultConfig(), true),
			TCP:                tcp, IdleTimeout: listener.ParseIdleTimeout(proxyIdleTimeout(proxy)),
			Wildcards: wildcards(proxy), DualStack: g.DualStack},
		Merged:          g.mergedGateway(push, proxy),
		VirtualServices: vsFor,
		Services:        push.ServicesForProxy(proxy),
		Topology:        proxyConfig(push, proxy).GetGatewayTopology(),
		Unprivileged:    unprivileged(proxy),
		TLSInputs: listener.GatewayTLS{Defaults: push.Mesh.GetTlsDefaults(), Certs: authn.ServerCertsFromMetadata(proxy.Metadata),
			CredentialError: g.credentialError(proxy)},
		Problems: problems,
	}
}

func (g *SidecarGenerators) routerRoutes(proxy *model.Proxy, push *model.PushContext, names []string, ps *envoyfilter.Patches) xds.Generated {
	m := g.mergedGateway(push, proxy)
	scope := push.SidecarScope(proxy)
	opts := route.GatewayOptions{ProxyNamespace: proxy.ConfigNamespace, ProxyLabels: proxy.Labels,
		VirtualServices: virtualServicesFor(push, proxy),
		LookupService:   func(_ *config.Config, h string) *model.Service { return scope.Service(h) }}
	var ro route.Options
	withHashes(&ro, push, proxy)
	opts.Hash, opts.MeshRetry = ro.Hash, ro.MeshRetry
	var out []*routeCfg
	for _, n := range names {
		out = append(out, route.BuildGatewayRouteConfiguration(n, m, opts))
	}
	out = g.patchRoutes(push, proxy, ps, envoyfilter.PatchContext{GatewayPorts: envoyfilter.GatewayPorts(m.ByRouteName)}, out)
	return toResources(g.enc, xds.RouteType, out, func(r *routeCfg) string { return r.Name })
}

// virtualServicesFor returns, per gateway, the VirtualServices bound to it
// that the proxy may see (looked up once per gateway).
func virtualServicesFor(push *model.PushContext, proxy *model.Proxy) func(string) []config.Config {
	cache := map[string][]config.Config{}
	return func(gw string) []config.Config {
		if vs, ok := cache[gw]; ok {
			return vs
		}
		vs := push.VirtualServicesForGateway(proxy.ConfigNamespace, gw)
		cache[gw] = vs
		return vs
	}
}

// unprivileged tells a gateway pod that runs without the privilege to bind
// ports below 1024 (metadata UNPRIVILEGED_POD).
func unprivileged(proxy *model.Proxy) bool {
	if proxy.Metadata == nil {
		return false
	}
	v, _ := proxy.Metadata.Raw["UNPRIVILEGED_POD"].(string)
	return v == "true"
}

// proxyConfig is the proxy's ProxyConfig: what its metadata carries (the
// agent sends the merged one), else the mesh's defaultConfig.
func proxyConfig(push *model.PushContext, proxy *model.Proxy) *meshconfig.ProxyConfig {
	if proxy.Metadata != nil && len(proxy.Metadata.ProxyConfig) > 0 {
		pc := &meshconfig.ProxyConfig{}
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(proxy.Metadata.ProxyConfig, pc); err == nil {
			return pc
		}
	}
	return push.Mesh.GetDefaultConfig()
}

// referencedServices keeps the services a route of the gateway's
// VirtualServices sends to (or mirrors to), as Istio does with
// PILOT_FILTER_GATEWAY_CLUSTER_CONFIG.
func referencedServices(push *model.PushContext, proxy *model.Proxy, m *gateway.Merged, services []*model.Service) []*model.Service {
	hosts := map[string]bool{}
	seen := map[string]bool{}
	for _, gw := range m.GatewayOf {
		if seen[gw] {
			continue
		}
		seen[gw] = true
		for _, vs := range push.VirtualServicesForGateway(proxy.ConfigNamespace, gw) {
			spec, ok := vs.Spec.(*networking.VirtualService)
			if !ok {
				continue
			}
			for _, h := range spec.Http {
				for _, r := range h.Route {
					hosts[r.GetDestination().GetHost()] = true
				}
				if h.Mirror != nil {
					hosts[h.Mirror.Host] = true
				}
				for _, mp := range h.Mirrors {
					hosts[mp.GetDestination().GetHost()] = true
				}
			}
			for _, t := range spec.Tcp {
				for _, r := range t.Route {
					hosts[r.GetDestination().GetHost()] = true
				}
			}
			for _, t := range spec.Tls {
				for _, r := range t.Route {
					hosts[r.GetDestination().GetHost()] = true
				}
			}
		}
	}
	out := make([]*model.Service, 0, len(hosts))
	for _, svc := range services {
		if hosts[svc.Hostname] {
			out = append(out, svc)
		}
	}
	return out
}
