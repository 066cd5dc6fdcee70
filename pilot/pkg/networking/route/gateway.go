package route

import (
	"sort"
	"strconv"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/gateway"
	"github.com/meshplane/istiod/pkg/config"
)

// GatewayOptions are the inputs of a gateway's route configurations.
type GatewayOptions struct {
	// ProxyNamespace and ProxyLabels of the gateway proxy (sourceLabels
	// matches).
	ProxyNamespace string
	ProxyLabels    map[string]string
	// VirtualServices bound to a gateway ("namespace/name"), resolved.
	VirtualServices func(gateway string) []config.Config
	// LookupService finds the service a VirtualService's destination host
	// names, preferring the VirtualService's namespace.
	LookupService func(vs *config.Config, host string) *model.Service
	// Hash and MeshRetry are as in Options.
	Hash      func(d *networking.Destination) *networking.LoadBalancerSettings_ConsistentHashLB
	MeshRetry *networking.HTTPRetry
}

// BuildGatewayRouteConfiguration builds the route configuration routeName
// of a merged gateway: a virtual host <host>:<server port> per host that a
// server of the route and a bound VirtualService share (the more specific
// of the two), holding that VirtualService's routes; HTTPS-redirect hosts
// require TLS. Without any host, one "blackhole" host answers 404. A name
// no server has (a gateway just deleted while Envoy drains) gets an empty
// configuration.
func BuildGatewayRouteConfiguration(routeName string, m *gateway.Merged, o GatewayOptions) *routev3.RouteConfiguration {
	empty := &routev3.RouteConfiguration{Name: routeName, VirtualHosts: []*routev3.VirtualHost{}, ValidateClusters: wrapperspb.Bool(false)}
	if m == nil {
		return empty
	}
	servers := m.ByRouteName[routeName]
	if len(servers) == 0 {
		return empty
	}
	vhosts := map[string]*routev3.VirtualHost{}
	byGateway := map[string][]config.Config{}
	routesOf := map[string][]*routev3.Route{}
	for _, s := range servers {
		gw := m.GatewayOf[s]
		port := int(s.Port.Number)
		vss, seen := byGateway[gw]
		if !seen && o.VirtualServices != nil {
			vss = o.VirtualServices(gw)
			byGateway[gw] = vss
		}
		for i := range vss {
			vs := &vss[i]
			hosts := intersectHosts(hostsForNamespace(s.Hosts, vs.Namespace), vs.Spec.(*networking.VirtualService).Hosts)
			if len(hosts) == 0 {
				continue
			}
			key := gw + "|" + vs.Namespace + "/" + vs.Name
			routes, built := routesOf[key]
			if !built {
				// built once per gateway and VirtualService, with the
				// first server's TLS, as Istio's buildGatewayHTTPRouteConfig
				// caches them (gatewayRoutes[gateway][vs])
				ro := Options{ProxyNamespace: o.ProxyNamespace, ProxyLabels: o.ProxyLabels, Gateway: gw, Hash: o.Hash, MeshRetry: o.MeshRetry,
					IsTLS: s.GetTls() != nil}
				if o.LookupService != nil {
					ro.LookupService = func(h string) *model.Service { return o.LookupService(vs, h) }
				}
				routes = translateVirtualService(vs, port, ro)
				routesOf[key] = routes
			}
			if len(routes) == 0 {
				continue
			}
			for _, h := range hosts {
				h = strings.ToLower(h)
				if vh := vhosts[h]; vh != nil {
					vh.Routes = append(vh.Routes, routes...)
					if s.GetTls().GetHttpsRedirect() {
						vh.RequireTls = routev3.VirtualHost_ALL
					}
					continue
				}
				vh := &routev3.VirtualHost{Name: h + ":" + strconv.Itoa(port), Domains: []string{h},
					Routes: append([]*routev3.Route(nil), routes...), IncludeRequestAttemptCount: true}
				if s.GetTls().GetHttpsRedirect() {
					vh.RequireTls = routev3.VirtualHost_ALL
				}
				vhosts[h] = vh
			}
		}
		if s.GetTls().GetHttpsRedirect() {
			for _, h := range s.Hosts {
				// Istio takes a namespace-scoped host ("ns/h") as the
				// domain itself; a domain with a "/" matches no request, so
				// we take the host
				if _, name, scoped := strings.Cut(h, "/"); scoped {
					h = name
				}
				h = strings.ToLower(h)
				if vh := vhosts[h]; vh != nil {
					vh.RequireTls = routev3.VirtualHost_ALL
					continue
				}
				vhosts[h] = &routev3.VirtualHost{Name: h + ":" + strconv.Itoa(port), Domains: []string{h},
					IncludeRequestAttemptCount: true, RequireTls: routev3.VirtualHost_ALL}
			}
		}
	}
	rc := &routev3.RouteConfiguration{
		Name:                           routeName,
		ValidateClusters:               wrapperspb.Bool(false),
		IgnorePortInHostMatching:       true,
		MaxDirectResponseBodySizeBytes: wrapperspb.UInt32(1 << 20),
	}
	if len(vhosts) == 0 {
		rc.VirtualHosts = []*routev3.VirtualHost{{Name: "blackhole:" + strconv.Itoa(int(servers[0].Port.Number)),
			Domains: []string{"*"}, Routes: []*routev3.Route{}}}
		return rc
	}
	for _, vh := range collapseVirtualHosts(vhosts) {
		vh.Routes = catchAllLast(vh.Routes)
		rc.VirtualHosts = append(rc.VirtualHosts, vh)
	}
	sort.SliceStable(rc.VirtualHosts, func(i, j int) bool { return rc.VirtualHosts[i].Name < rc.VirtualHosts[j].Name })
	return rc
}

// hostsForNamespace are the server hosts that apply to VirtualServices of
// namespace ns: unscoped ones, and "<ns>/h" or "*/h" without the scope.
func hostsForNamespace(hosts []string, ns string) []string {
	var out []string
	for _, h := range hosts {
		scope, name, scoped := strings.Cut(h, "/")
		switch {
		case !scoped:
			out = append(out, h)
		case scope == ns || scope == "*":
			out = append(out, name)
		}
	}
	return out
}

// intersectHosts returns, for each pair of matching hosts, the more
// specific one, once, in the order found.
func intersectHosts(a, b []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(h string) {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	for _, x := range a {
		for _, y := range b {
			switch {
			case model.HostSubsetOf(x, y):
				add(x)
			case model.HostSubsetOf(y, x):
				add(y)
			}
		}
	}
	return out
}

// collapseVirtualHosts merges hosts that carry the very same routes (the
// same VirtualService on several hosts) into one virtual host, named after
// the first in order, as Istio's collapseDuplicateRoutes
// (pilot/pkg/networking/core/gateway.go) does to keep route configurations
// small. The order is that of host.Names: the most specific first
// (non-wildcards before wildcards, longer before shorter, then
// alphabetical), which decides each merged host's name and the order of
// its domains.
func collapseVirtualHosts(in map[string]*routev3.VirtualHost) []*routev3.VirtualHost {
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return moreSpecific(keys[i], keys[j]) })
	var out []*routev3.VirtualHost
	for _, k := range keys {
		vh := in[k]
		merged := false
		for _, prev := range out {
			if sameRoutes(prev, vh) {
				prev.Domains = append(prev.Domains, vh.Domains...)
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, vh)
		}
	}
	return out
}

// moreSpecific orders hosts as Istio's host.MoreSpecific: non-wildcards
// first, then longer first, then alphabetically.
func moreSpecific(a, b string) bool {
	aw, bw := strings.HasPrefix(a, "*"), strings.HasPrefix(b, "*")
	if aw != bw {
		return bw
	}
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a < b
}

func sameRoutes(a, b *routev3.VirtualHost) bool {
	if a.IncludeRequestAttemptCount != b.IncludeRequestAttemptCount || a.RequireTls != b.RequireTls || len(a.Routes) != len(b.Routes) {
		return false
	}
	for i := range a.Routes {
		if a.Routes[i] != b.Routes[i] {
			return false
		}
	}
	return true
}

// catchAllLast moves routes that match every request to the end, keeping
// the order otherwise.
func catchAllLast(routes []*routev3.Route) []*routev3.Route {
	var head, tail []*routev3.Route
	for _, r := range routes {
		if isCatchAllRoute(r) {
			tail = append(tail, r)
		} else {
			head = append(head, r)
		}
	}
	return append(head, tail...)
}

func isCatchAllRoute(r *routev3.Route) bool {
	m := r.GetMatch()
	all := false
	switch p := m.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		all = p.Prefix == "/"
	case *routev3.RouteMatch_PathSeparatedPrefix:
		all = p.PathSeparatedPrefix == "/"
	case *routev3.RouteMatch_SafeRegex:
		all = p.SafeRegex.GetRegex() == ".*"
	}
	return all && len(m.Headers) == 0 && len(m.QueryParameters) == 0 && len(m.DynamicMetadata) == 0
}
