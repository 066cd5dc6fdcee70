package envoyfilter

import (
	"slices"
	"strconv"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	networking "istio.io/api/networking/v1alpha3"
)

// PatchRoutes applies the ROUTE_CONFIGURATION, VIRTUAL_HOST and HTTP_ROUTE
// patches to the route configurations a proxy fetches over RDS: in the
// GATEWAY context for a router proxy, in SIDECAR_OUTBOUND for a sidecar
// (sidecars' inbound routes are inline in their listeners: PatchListeners
// patches those). The input is not modified; see the package's
// consistency contract.
func PatchRoutes(ps *Patches, pc PatchContext, routes []*routev3.RouteConfiguration) ([]*routev3.RouteConfiguration, []Problem) {
	if ps.Empty() {
		return routes, nil
	}
	ctx := networking.EnvoyFilter_SIDECAR_OUTBOUND
	if ps.gateway {
		ctx = networking.EnvoyFilter_GATEWAY
	}
	s := &session{ps: ps, pc: pc}
	out := make([]*routev3.RouteConfiguration, len(routes))
	for i, rc := range routes {
		out[i] = rc
		if rc != nil {
			out[i] = s.patchRouteConfiguration(ctx, rc)
		}
	}
	return out, s.result()
}

// hasRoutePatches reports whether any route-level patch applies in ctx.
func (ps *Patches) hasRoutePatches(ctx networking.EnvoyFilter_PatchContext) bool {
	return len(ps.list(ctx, networking.EnvoyFilter_ROUTE_CONFIGURATION)) > 0 ||
		len(ps.list(ctx, networking.EnvoyFilter_VIRTUAL_HOST)) > 0 ||
		len(ps.list(ctx, networking.EnvoyFilter_HTTP_ROUTE)) > 0
}

// patchRouteConfiguration applies the patches of ctx to one route
// configuration: the ROUTE_CONFIGURATION merges, then the virtual hosts.
func (s *session) patchRouteConfiguration(ctx networking.EnvoyFilter_PatchContext, rc *routev3.RouteConfiguration) *routev3.RouteConfiguration {
	if !s.ps.hasRoutePatches(ctx) {
		return rc
	}
	res := "route configuration " + rc.GetName()
	cur, owned := rc, false
	for _, p := range s.ps.list(ctx, networking.EnvoyFilter_ROUTE_CONFIGURATION) {
		if s.routeConfigurationMatch(ctx, cur, p) {
			if next, ok := mergeWhole(s, p, res, cur); ok {
				cur, owned = next, true
			}
		}
	}
	if vhosts, changed := s.patchVirtualHosts(ctx, cur, res); changed {
		if !owned {
			cur = shallow(cur)
		}
		cur.VirtualHosts = vhosts
	}
	return cur
}

// patchVirtualHosts applies REMOVE, MERGE and REPLACE to each virtual host
// (then its routes), appends the ADD ones, and leaves out removed hosts:
// every host of a removed host's name, as Istio does.
func (s *session) patchVirtualHosts(ctx networking.EnvoyFilter_PatchContext, rc *routev3.RouteConfiguration, res string) (
	[]*routev3.VirtualHost, bool,
) {
	list, changed := rc.GetVirtualHosts(), false
	set := func(i int, vh *routev3.VirtualHost) {
		if !changed {
			list, changed = slices.Clone(list), true
		}
		list[i] = vh
	}
	var removed map[string]bool
	for i, vh := range rc.GetVirtualHosts() {
		nvh, rm := s.patchVirtualHost(ctx, rc, vh, res)
		if rm {
			if removed == nil {
				removed = map[string]bool{}
			}
			removed[nvh.GetName()] = true
		}
		if nvh != vh {
			set(i, nvh)
		}
	}
	for _, p := range s.ps.list(ctx, networking.EnvoyFilter_VIRTUAL_HOST) {
		if p.op == networking.EnvoyFilter_Patch_ADD && s.routeConfigurationMatch(ctx, rc, p) {
			if !changed {
				list, changed = slices.Clone(list), true
			}
			list = append(list, p.value.(*routev3.VirtualHost))
		}
	}
	if len(removed) > 0 {
		if !changed {
			list, changed = slices.Clone(list), true
		}
		list = slices.DeleteFunc(list, func(vh *routev3.VirtualHost) bool { return removed[vh.GetName()] })
	}
	return list, changed
}

// patchVirtualHost applies the VIRTUAL_HOST patches to one host in order,
// then its routes; rm reports a REMOVE (the host as it was then is
// returned, for its name).
func (s *session) patchVirtualHost(ctx networking.EnvoyFilter_PatchContext, rc *routev3.RouteConfiguration,
	vh *routev3.VirtualHost, rcRes string,
) (out *routev3.VirtualHost, rm bool) {
	cur, owned := vh, false
	for _, p := range s.ps.list(ctx, networking.EnvoyFilter_VIRTUAL_HOST) {
		if !s.routeConfigurationMatch(ctx, rc, p) || !virtualHostMatch(cur, p) {
			continue
		}
		switch {
		case p.op == networking.EnvoyFilter_Patch_REMOVE:
			return cur, true
		case isMerge(p.op):
			if next, ok := mergeWhole(s, p, rcRes+" virtual host "+cur.GetName(), cur); ok {
				cur, owned = next, true
			}
		case p.op == networking.EnvoyFilter_Patch_REPLACE:
			cur, owned = p.value.(*routev3.VirtualHost), false
		}
	}
	if routes, changed := s.patchHTTPRoutes(ctx, rc, cur, rcRes+" virtual host "+cur.GetName()); changed {
		if !owned {
			cur = shallow(cur)
		}
		cur.Routes = routes
	}
	return cur, false
}

// patchHTTPRoutes applies the HTTP_ROUTE patches of a virtual host: REMOVE
// and MERGE route by route, then ADD and the INSERT operations in order.
func (s *session) patchHTTPRoutes(ctx networking.EnvoyFilter_PatchContext, rc *routev3.RouteConfiguration,
	vh *routev3.VirtualHost, res string,
) ([]*routev3.Route, bool) {
	var ps []*patch
	for _, p := range s.ps.list(ctx, networking.EnvoyFilter_HTTP_ROUTE) {
		if s.routeConfigurationMatch(ctx, rc, p) && virtualHostMatch(vh, p) {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return vh.GetRoutes(), false
	}
	list, changed := vh.GetRoutes(), false
	removed := false
	for i, r := range vh.GetRoutes() {
		nr, rm := s.patchHTTPRoute(ps, r, res)
		if nr == r && !rm {
			continue
		}
		if !changed {
			list, changed = slices.Clone(list), true
		}
		if rm {
			list[i], removed = nil, true
		} else {
			list[i] = nr
		}
	}
	for _, p := range ps {
		v, _ := p.value.(*routev3.Route)
		var c bool
		switch p.op {
		case networking.EnvoyFilter_Patch_ADD, networking.EnvoyFilter_Patch_INSERT_AFTER, networking.EnvoyFilter_Patch_INSERT_BEFORE:
			list, c = listOp(list, changed, p.op, v, hasRouteMatch(p), func(r *routev3.Route) bool { return routeMatch(r, p) })
		case networking.EnvoyFilter_Patch_INSERT_FIRST:
			// with a route match, only when some route matches
			if !hasRouteMatch(p) || slices.ContainsFunc(list, func(r *routev3.Route) bool { return routeMatch(r, p) }) {
				list, c = insertAt(list, 0, v), true
			}
		}
		changed = changed || c
	}
	if removed {
		list = slices.DeleteFunc(list, func(r *routev3.Route) bool { return r == nil })
	}
	return list, changed
}

// patchHTTPRoute applies the REMOVE and MERGE patches to one route in
// order; rm reports a REMOVE.
func (s *session) patchHTTPRoute(ps []*patch, r *routev3.Route, res string) (*routev3.Route, bool) {
	cur := r
	for _, p := range ps {
		if !routeMatch(cur, p) {
			continue
		}
		switch {
		case p.op == networking.EnvoyFilter_Patch_REMOVE:
			return nil, true
		case isMerge(p.op):
			if next, ok := mergeWhole(s, p, res+" route "+cur.GetName(), cur); ok {
				cur = next
			}
		}
	}
	return cur, false
}

// routeConfigurationMatch checks the route configuration part of a match.
// Sidecars match the name and the port (the name's number, or the port of
// an inbound|port|| name); gateways the name, and the port (through the
// servers behind the route), port name and gateway of their route names.
func (s *session) routeConfigurationMatch(ctx networking.EnvoyFilter_PatchContext, rc *routev3.RouteConfiguration, p *patch) bool {
	m := p.match.GetRouteConfiguration()
	if m == nil {
		return true
	}
	if m.GetName() != "" && m.GetName() != rc.GetName() {
		return false
	}
	if ctx != networking.EnvoyFilter_GATEWAY {
		return m.GetPortNumber() == 0 || int(m.GetPortNumber()) == sidecarRoutePort(rc.GetName())
	}
	port, portName, gateway := parseGatewayRouteName(rc.GetName())
	if m.GetPortName() != "" && m.GetPortName() != portName {
		return false
	}
	if m.GetGateway() != "" && m.GetGateway() != gateway {
		return false
	}
	return m.GetPortNumber() == 0 || s.gatewayPortMatches(port, int(m.GetPortNumber()))
}

// gatewayPortMatches compares a match's port with the ports of the servers
// behind a gateway route port, or with the route port itself when the
// context knows no servers for it.
func (s *session) gatewayPortMatches(routePort, want int) bool {
	if ports, ok := s.pc.GatewayPorts[routePort]; ok {
		return slices.Contains(ports, want)
	}
	return routePort == want
}

// sidecarRoutePort is the port of a sidecar route configuration name: the
// port of "inbound|port|...", or the name as a number (0 otherwise).
func sidecarRoutePort(name string) int {
	if strings.HasPrefix(name, "inbound") {
		_, _, _, port := parseSubsetKey(name)
		return port
	}
	port, _ := strconv.Atoi(name)
	return port
}

// parseGatewayRouteName reads a gateway route configuration name as Istio
// does: "http.<port>" gives the port, "https.<port>.<port name>.<gateway
// name>.<namespace>" the port, port name and gateway ("namespace/name").
func parseGatewayRouteName(name string) (port int, portName, gateway string) {
	if rest, ok := strings.CutPrefix(name, "http."); ok {
		port, _ = strconv.Atoi(rest)
		return port, "", ""
	}
	if !strings.HasPrefix(name, "https.") || strings.Count(name, ".") != 4 {
		return 0, "", ""
	}
	parts := strings.Split(strings.TrimPrefix(name, "https."), ".")
	port, _ = strconv.Atoi(parts[0])
	return port, parts[1], parts[3] + "/" + parts[2]
}

// virtualHostMatch checks the virtual host part of a match: name and one
// of the domains.
func virtualHostMatch(vh *routev3.VirtualHost, p *patch) bool {
	m := p.match.GetRouteConfiguration().GetVhost()
	if m == nil {
		return true
	}
	if vh == nil {
		return false
	}
	return (m.GetName() == "" || m.GetName() == vh.GetName()) &&
		(m.GetDomainName() == "" || slices.Contains(vh.GetDomains(), m.GetDomainName()))
}

// hasRouteMatch: the patch names a route.
func hasRouteMatch(p *patch) bool {
	return p.match.GetRouteConfiguration().GetVhost().GetRoute() != nil
}

// routeMatch checks the route part of a match: name and action (a route
// whose action is none of route, redirect and direct response matches any
// action). A removed route (nil) matches no route match.
func routeMatch(r *routev3.Route, p *patch) bool {
	m := p.match.GetRouteConfiguration().GetVhost().GetRoute()
	if m == nil {
		return true
	}
	if r == nil {
		return false
	}
	if m.GetName() != "" && m.GetName() != r.GetName() {
		return false
	}
	if m.GetAction() == networking.EnvoyFilter_RouteConfigurationMatch_RouteMatch_ANY {
		return true
	}
	switch r.GetAction().(type) {
	case *routev3.Route_Route:
		return m.GetAction() == networking.EnvoyFilter_RouteConfigurationMatch_RouteMatch_ROUTE
	case *routev3.Route_Redirect:
		return m.GetAction() == networking.EnvoyFilter_RouteConfigurationMatch_RouteMatch_REDIRECT
	case *routev3.Route_DirectResponse:
		return m.GetAction() == networking.EnvoyFilter_RouteConfigurationMatch_RouteMatch_DIRECT_RESPONSE
	}
	return true
}
