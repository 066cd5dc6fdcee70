package generators

import (
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	rbachttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	uritemplatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/path/match/uri_template/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// GRPCGenerator is the node metadata GENERATOR of proxyless gRPC clients.
const GRPCGenerator = "grpc"

// RegisterGRPC installs the proxyless gRPC generators: API listeners named
// <host>:<port>, one route configuration per listener
// (outbound|<port>||<host>), and the clusters and endpoints the client asks
// for by name, in the shape grpc-go accepts (no sidecar-only fields).
func (g *SidecarGenerators) RegisterGRPC(s *xds.DiscoveryServer) {
	g.enc = s.Encodings()
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
	var (
		inbound bool // targets and rbac computed
		targets []listener.InboundTarget
		rbac    []*hcm.HttpFilter
	)
	for _, name := range names {
		if addr, ok := strings.CutPrefix(name, GRPCServerListenerPrefix); ok {
			if !inbound {
				inbound = true
				targets = g.proxyTargets(proxy)
				rbac = g.grpcServerRBAC(req.Push, proxy)
			}
			if l := grpcServerListener(name, addr, targets, rbac); l != nil {
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
	return toResources(g.enc, xds.ListenerType, out, func(l *listenerCfg) string { return l.Name }), nil
}

// GRPCServerListenerPrefix starts the names under which proxyless gRPC
// servers ask for their listener (the server_listener_resource_name_template
// of Istio's gRPC bootstrap), followed by the address they listen on.
const GRPCServerListenerPrefix = "xds.istio.io/grpc/lds/inbound/"

// grpcServerListener is the listener of a proxyless gRPC server listening on
// addr ("ip:port"): every RPC is served locally (a non-forwarding route),
// after the workload's RBAC filters (grpcServerRBAC), which grpc-go enforces
// on every RPC. The server only gets one for a port that a service targets
// on it; without its listener a gRPC xDS server does not serve. mTLS comes
// with the CA and security issues.
func grpcServerListener(name, addr string, targets []listener.InboundTarget, rbac []*hcm.HttpFilter) *listenerCfg {
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
		HttpFilters: append(append([]*hcm.HttpFilter{}, rbac...),
			&hcm.HttpFilter{Name: "envoy.filters.http.router", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: protoconv.MessageToAny(&routerv3.Router{})}}),
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

// Names of the RBAC filters of a proxyless server's listener, as Istio's:
// grpc-go wants the filter names of one HCM unique.
const (
	grpcRBACAllowFilter = "envoy.filters.http.rbac"
	grpcRBACDenyFilter  = "envoy.filters.http.rbac.DENY"
)

// grpcServerRBAC are the authorization filters of a proxyless gRPC server:
// the workload's AuthorizationPolicies through the same builder as the
// sidecars' inbound chains, reshaped for grpc-go's RBAC filter (gRFC A41;
// google.golang.org/grpc/internal/xds/httpfilter/rbac and
// internal/xds/rbac). Istio 1.31 (pilot/pkg/networking/grpcgen/lds.go,
// buildInboundFilterChain and buildRBAC) sends proxyless servers one
// envoy.filters.http.rbac.DENY filter, then one envoy.filters.http.rbac for
// ALLOW, each only when its action has rules, with only rules set, and
// policies named <namespace>-<name>-<rule index>. So do we:
//
//   - CUSTOM policies are not sent: grpc-go has no ext_authz filter (and an
//     unknown non-optional filter would make it reject the listener), so
//     neither their ext_authz nor their shadow RBAC filter is.
//   - AUDIT (RBAC action LOG) is not sent: grpc-go reads a LOG filter as
//     no filter at all (A41) and has no access log to mark.
//   - Dry-run policies (istio.io/dry-run) are not sent: they are the
//     builder's shadow_rules (and shadow_rules_stat_prefix), which grpc-go
//     never reads; it has no shadow engine, no stats and no dynamic
//     metadata to report them in. Istio here differs: its proxyless builder
//     ignores the annotation and enforces dry-run policies.
//   - The policy names lose the sidecar's ns[..]-policy[..]-rule[..] form
//     for Istio's proxyless one; grpc-go quotes the name in the
//     PermissionDenied message of a DENY match.
//
// The rest of what grpc-go rejects (A41: a policy condition, a top-level
// header matcher for :scheme or a grpc- header, an empty prefix, suffix or
// contains string matcher) the builder never produces: every rule's
// matchers sit under one and_rules and one and_ids, and * is a presence
// or .+ match.
//
// Where we differ from Istio, on purpose: the rules are the sidecar's,
// trust domain aliases included (Istio's proxyless rules skip them), and an
// ALLOW policy without rules, or whose rules were all left out, denies
// everything as it does on sidecars (Istio then sends no ALLOW filter, and
// so allows everything). Matchers grpc-go does not implement are rewritten
// by grpcPermission and grpcPrincipal (Istio sends them as they are).
func (g *SidecarGenerators) grpcServerRBAC(push *model.PushContext, proxy *model.Proxy) []*hcm.HttpFilter {
	policies := push.AuthorizationPolicies(proxy)
	if len(policies) == 0 {
		return nil
	}
	h := g.security(push).authz.BuildHTTP(policies)
	logPolicyWarnings(proxy, h.Warnings)
	if len(h.Custom) > 0 {
		genLog.Debugf("%s: CUSTOM AuthorizationPolicies are not enforced by proxyless gRPC servers (no ext_authz)", proxy.ID)
	}
	var deny, allow *hcm.HttpFilter
	for _, f := range h.Local {
		cfg := &rbachttp.RBAC{}
		if err := f.GetTypedConfig().UnmarshalTo(cfg); err != nil {
			genLog.Errorf("%s: RBAC filter %s: %v", proxy.ID, f.GetName(), err)
			continue
		}
		rules := cfg.GetRules()
		if rules == nil { // only dry-run policies
			continue
		}
		switch rules.GetAction() {
		case rbacpb.RBAC_DENY:
			if len(rules.GetPolicies()) > 0 {
				deny = grpcRBACFilter(grpcRBACDenyFilter, rules)
			}
		case rbacpb.RBAC_ALLOW:
			allow = grpcRBACFilter(grpcRBACAllowFilter, rules)
		}
	}
	var out []*hcm.HttpFilter
	for _, f := range []*hcm.HttpFilter{deny, allow} {
		if f != nil {
			out = append(out, f)
		}
	}
	return out
}

// grpcRBACFilter is an RBAC HTTP filter with only these rules (no shadow
// rules, no stat prefixes), policies renamed and rewritten for grpc-go.
func grpcRBACFilter(name string, rules *rbacpb.RBAC) *hcm.HttpFilter {
	out := &rbacpb.RBAC{Action: rules.GetAction(), Policies: make(map[string]*rbacpb.Policy, len(rules.GetPolicies()))}
	for _, k := range sortedKeys(rules.GetPolicies()) {
		p := rules.GetPolicies()[k]
		for i, perm := range p.GetPermissions() {
			p.Permissions[i] = grpcPermission(perm)
		}
		for i, pr := range p.GetPrincipals() {
			p.Principals[i] = grpcPrincipal(pr)
		}
		n := grpcPolicyName(k)
		if _, taken := out.Policies[n]; taken {
			n = k // two policies would share a name: keep both, as named by the builder
		}
		out.Policies[n] = p
	}
	return &hcm.HttpFilter{Name: name, ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: protoconv.MessageToAny(&rbachttp.RBAC{Rules: out})}}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// grpcPolicyName turns the builder's ns[<ns>]-policy[<name>]-rule[<i>] into
// Istio's proxyless <ns>-<name>-<i>; other names are kept.
func grpcPolicyName(n string) string {
	rest, ok := strings.CutPrefix(n, "ns[")
	if !ok {
		return n
	}
	ns, rest, ok1 := strings.Cut(rest, "]-policy[")
	name, rest, ok2 := strings.Cut(rest, "]-rule[")
	idx, ok3 := strings.CutSuffix(rest, "]")
	if !ok1 || !ok2 || !ok3 {
		return n
	}
	return ns + "-" + name + "-" + idx
}

// grpcPermission rewrites, in place, the matchers grpc-go's RBAC engine does
// not evaluate as Envoy would. grpc-go skips the matchers it does not
// implement: inside and_rules a skipped matcher widens the rule, and under
// a not_rule it panics (index out of range while building the engine,
// which takes the server down) — both reachable with what Istio generates,
// e.g. notValues of an experimental.envoy.filters.* condition. So:
//
//   - metadata (of Envoy filters): nothing writes dynamic metadata on a
//     proxyless server, so it never matches, as in Envoy with no metadata
//     (an inverted matcher always does);
//   - uri_template (path templates, {*} and {**}): the same match as a
//     safe_regex on the path, with Envoy's translation of * and **;
//   - anything else grpc-go lacks (requested_server_name, port ranges,
//     generic matchers): never matches, what grpc-go makes of it inside an
//     or_rules, now wherever it sits.
func grpcPermission(p *rbacpb.Permission) *rbacpb.Permission {
	switch r := p.GetRule().(type) {
	case *rbacpb.Permission_AndRules:
		for i, c := range r.AndRules.GetRules() {
			r.AndRules.Rules[i] = grpcPermission(c)
		}
	case *rbacpb.Permission_OrRules:
		for i, c := range r.OrRules.GetRules() {
			r.OrRules.Rules[i] = grpcPermission(c)
		}
	case *rbacpb.Permission_NotRule:
		r.NotRule = grpcPermission(r.NotRule)
	case *rbacpb.Permission_Any, *rbacpb.Permission_UrlPath, *rbacpb.Permission_DestinationIp, *rbacpb.Permission_DestinationPort:
	case *rbacpb.Permission_Header:
		grpcHeader(r.Header)
	case *rbacpb.Permission_Metadata:
		if r.Metadata.GetInvert() {
			return &rbacpb.Permission{Rule: &rbacpb.Permission_Any{Any: true}}
		}
		return permissionNever()
	case *rbacpb.Permission_UriTemplate:
		if re, ok := uriTemplateRegex(r.UriTemplate); ok {
			return &rbacpb.Permission{Rule: &rbacpb.Permission_UrlPath{UrlPath: &matcherv3.PathMatcher{Rule: &matcherv3.PathMatcher_Path{
				Path: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: re}}}}}}}
		}
		return permissionNever()
	default:
		return permissionNever()
	}
	return p
}

// grpcPrincipal is grpcPermission for principals: metadata (JWT claims,
// audiences, presenter and request principals, which no jwt_authn filter
// writes on a proxyless server) never matches unless inverted, the
// deprecated source_ip is the direct remote IP it means, and what else
// grpc-go lacks (filter state) never matches. Untouched, notValues of
// request.auth.claims, audiences or presenter put a not_id directly over
// metadata (grpc-go panics), and requestPrincipals an and_ids of two
// metadata matchers that grpc-go empties, so that any request matches.
func grpcPrincipal(p *rbacpb.Principal) *rbacpb.Principal {
	switch id := p.GetIdentifier().(type) {
	case *rbacpb.Principal_AndIds:
		for i, c := range id.AndIds.GetIds() {
			id.AndIds.Ids[i] = grpcPrincipal(c)
		}
	case *rbacpb.Principal_OrIds:
		for i, c := range id.OrIds.GetIds() {
			id.OrIds.Ids[i] = grpcPrincipal(c)
		}
	case *rbacpb.Principal_NotId:
		id.NotId = grpcPrincipal(id.NotId)
	case *rbacpb.Principal_Any, *rbacpb.Principal_Authenticated_, *rbacpb.Principal_DirectRemoteIp,
		*rbacpb.Principal_RemoteIp, *rbacpb.Principal_UrlPath:
	case *rbacpb.Principal_Header:
		grpcHeader(id.Header)
	case *rbacpb.Principal_SourceIp: //nolint:staticcheck // read to translate it
		return &rbacpb.Principal{Identifier: &rbacpb.Principal_DirectRemoteIp{DirectRemoteIp: id.SourceIp}} //nolint:staticcheck // as above
	case *rbacpb.Principal_Metadata:
		if id.Metadata.GetInvert() {
			return &rbacpb.Principal{Identifier: &rbacpb.Principal_Any{Any: true}}
		}
		return principalNever()
	default:
		return principalNever()
	}
	return p
}

func principalNever() *rbacpb.Principal {
	return &rbacpb.Principal{Identifier: &rbacpb.Principal_NotId{NotId: &rbacpb.Principal{Identifier: &rbacpb.Principal_Any{Any: true}}}}
}

func permissionNever() *rbacpb.Permission {
	return &rbacpb.Permission{Rule: &rbacpb.Permission_NotRule{NotRule: &rbacpb.Permission{Rule: &rbacpb.Permission_Any{Any: true}}}}
}

// grpcHeader names the Host header :authority, as grpc-go's metadata does
// (Envoy aliases the two; grpc-go renames only top-level matchers).
func grpcHeader(h *routev3.HeaderMatcher) {
	if strings.EqualFold(h.GetName(), "host") {
		h.Name = ":authority"
	}
}

// uriTemplateRegex is the regular expression Envoy's uri_template matcher
// compiles a path template to: * is one path segment of URI path
// characters, ** any run of them and slashes, the rest literal.
func uriTemplateRegex(tc *core.TypedExtensionConfig) (string, bool) {
	cfg := &uritemplatev3.UriTemplateMatchConfig{}
	if err := tc.GetTypedConfig().UnmarshalTo(cfg); err != nil || cfg.GetPathTemplate() == "" {
		return "", false
	}
	const pchar = `a-zA-Z0-9\-._~%!$&'()+,;:@`
	var b strings.Builder
	for rest := cfg.GetPathTemplate(); rest != ""; {
		switch {
		case strings.HasPrefix(rest, "**"):
			b.WriteString("[" + pchar + "/]*")
			rest = rest[2:]
		case strings.HasPrefix(rest, "*"):
			b.WriteString("[" + pchar + "]+")
			rest = rest[1:]
		default:
			i := strings.IndexByte(rest, '*')
			if i < 0 {
				i = len(rest)
			}
			b.WriteString(regexp.QuoteMeta(rest[:i]))
			rest = rest[i:]
		}
	}
	return b.String(), true
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
	return toResources(g.enc, xds.RouteType, out, func(r *routeCfg) string { return r.Name }), nil
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
	return toResources(g.enc, xds.ClusterType, out, func(c *clusterCfg) string { return c.Name }), nil
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
