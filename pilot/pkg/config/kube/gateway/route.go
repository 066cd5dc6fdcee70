package gateway

import (
	"fmt"
	"strconv"

	istio "istio.io/api/networking/v1alpha3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/host"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// ConvertRoute translates one HTTPRoute, GRPCRoute, TCPRoute or TLSRoute:
// its VirtualServices (one per accepting listener and hostname, or mesh
// host), its parents' status, and the listeners it attached to.
func ConvertRoute(ctx Context, opts Options, cfg config.Config) RouteResult {
	r, ok := routeOf(cfg)
	if !ok {
		return RouteResult{}
	}
	rc := routeCtx{ctx: ctx, opts: opts, kind: r.kind, ns: cfg.Namespace}
	parents := routeParents(ctx, opts, r)
	var vss []KeyedVirtualService
	var errs ruleErrors
	switch spec := cfg.Spec.(type) {
	case *gatewayv1.HTTPRouteSpec:
		mesh, gw := convertRules(parents, func(mesh bool) ([]*istio.HTTPRoute, *ConfigError) {
			return rc.withMesh(mesh).httpRules(cfg.Namespace, cfg.Name, spec.Rules)
		})
		errs = ruleErrors{mesh: mesh.err, gateway: gw.err}
		vss = httpVirtualServices(rc, r, parents, mesh.routes, gw.routes)
	case *gatewayv1.GRPCRouteSpec:
		mesh, gw := convertRules(parents, func(mesh bool) ([]*istio.HTTPRoute, *ConfigError) {
			return rc.withMesh(mesh).grpcRules(cfg.Namespace, cfg.Name, spec.Rules)
		})
		errs = ruleErrors{mesh: mesh.err, gateway: gw.err}
		vss = httpVirtualServices(rc, r, parents, mesh.routes, gw.routes)
	case *gatewayv1alpha2.TCPRouteSpec:
		mesh, gw := convertRules(parents, func(mesh bool) ([]*istio.TCPRoute, *ConfigError) {
			return rc.withMesh(mesh).tcpRules(spec.Rules)
		})
		errs = ruleErrors{mesh: mesh.err, gateway: gw.err}
		vss = tcpVirtualServices(rc, r, parents, mesh.routes, gw.routes)
	case *gatewayv1.TLSRouteSpec:
		mesh, gw := convertRules(parents, func(mesh bool) ([]*istio.TLSRoute, *ConfigError) {
			return rc.withMesh(mesh).tlsRules(spec.Hostnames, spec.Rules)
		})
		errs = ruleErrors{mesh: mesh.err, gateway: gw.err}
		vss = tlsVirtualServices(rc, r, parents, mesh.routes, gw.routes)
	}
	return RouteResult{
		Status:          gatewayv1.RouteStatus{Parents: routeStatus(r, parents, errs)},
		VirtualServices: vss,
		Attachments:     attachments(parents),
	}
}

func (rc routeCtx) withMesh(mesh bool) routeCtx {
	rc.mesh = mesh
	return rc
}

// converted is the outcome of converting a route's rules for the mesh or
// for Gateways.
type converted[T any] struct {
	routes []T
	err    *ConfigError
}

// ruleErrors are the rule errors reported to mesh and Gateway parents.
type ruleErrors struct{ mesh, gateway *ConfigError }

// convertRules converts the rules for the kinds of parents there are.
func convertRules[T any](parents []routeParent, conv func(mesh bool) ([]T, *ConfigError)) (mesh, gw converted[T]) {
	needMesh, needGw := false, false
	for _, p := range parents {
		needMesh, needGw = needMesh || p.mesh, needGw || !p.mesh
	}
	if needMesh {
		mesh.routes, mesh.err = conv(true)
	}
	if needGw {
		gw.routes, gw.err = conv(false)
	}
	return mesh, gw
}

// routeOf reads what every route kind has in common.
func routeOf(cfg config.Config) (route, bool) {
	r := route{cfg: cfg}
	switch spec := cfg.Spec.(type) {
	case *gatewayv1.HTTPRouteSpec:
		r.kind, r.parentRefs, r.hostnames = kindHTTPRoute, spec.ParentRefs, spec.Hostnames
		if st, ok := cfg.Status.(*gatewayv1.HTTPRouteStatus); ok && st != nil {
			r.current = st.Parents
		}
	case *gatewayv1.GRPCRouteSpec:
		r.kind, r.parentRefs, r.hostnames = kindGRPCRoute, spec.ParentRefs, spec.Hostnames
		if st, ok := cfg.Status.(*gatewayv1.GRPCRouteStatus); ok && st != nil {
			r.current = st.Parents
		}
	case *gatewayv1alpha2.TCPRouteSpec:
		r.kind, r.parentRefs = kindTCPRoute, spec.ParentRefs
		if st, ok := cfg.Status.(*gatewayv1alpha2.TCPRouteStatus); ok && st != nil {
			r.current = st.Parents
		}
	case *gatewayv1.TLSRouteSpec:
		r.kind, r.parentRefs, r.hostnames = kindTLSRoute, spec.ParentRefs, spec.Hostnames
		if st, ok := cfg.Status.(*gatewayv1.TLSRouteStatus); ok && st != nil {
			r.current = st.Parents
		}
	default:
		return route{}, false
	}
	return r, true
}

// RouteStatusObject wraps a route's status in the status type of its kind.
func RouteStatusObject(kind config.GroupVersionKind, s gatewayv1.RouteStatus) any {
	switch kind {
	case gvk.HTTPRoute:
		return &gatewayv1.HTTPRouteStatus{RouteStatus: s}
	case gvk.GRPCRoute:
		return &gatewayv1.GRPCRouteStatus{RouteStatus: s}
	case gvk.TCPRoute:
		return &gatewayv1alpha2.TCPRouteStatus{RouteStatus: s}
	case gvk.TLSRoute:
		return &gatewayv1.TLSRouteStatus{RouteStatus: s}
	}
	return nil
}

func routeMeta(rc routeCtx, r route, name string) config.Meta {
	return config.Meta{
		GroupVersionKind:  gvk.VirtualService,
		Name:              name,
		Namespace:         r.cfg.Namespace,
		Domain:            rc.opts.DomainSuffix,
		CreationTimestamp: r.cfg.CreationTimestamp,
		Annotations: map[string]string{
			annotationParents:        parentsAnnotation(r.kind.Kind, r.cfg.Name, r.cfg.Namespace, ""),
			annotationRouteSemantics: semanticsGateway,
		},
	}
}

func hostnameList(hs []gatewayv1.Hostname) []string {
	if len(hs) == 0 {
		return []string{"*"}
	}
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = string(h)
	}
	return out
}

// httpVirtualServices builds one VirtualService per accepting listener and
// route hostname (or mesh host), keyed for merging with the other routes of
// that listener (or namespace and port) and hostname.
func httpVirtualServices(rc routeCtx, r route, parents []routeParent, meshRoutes, gwRoutes []*istio.HTTPRoute) []KeyedVirtualService {
	var out []KeyedVirtualService
	count := 0
	for _, p := range admitted(parents) {
		key, hosts, routes := p.internalName, hostnameList(r.hostnames), gwRoutes
		if p.mesh {
			key, hosts, routes = r.cfg.Namespace, p.meshHosts, meshRoutes
			if port := p.ref.Port; port != nil {
				routes = withHTTPPort(routes, uint32(*port))
				key += "/" + strconv.Itoa(int(*port))
			}
		}
		if len(routes) == 0 {
			continue
		}
		for _, h := range hosts {
			if !p.allowedByIsolation(h) {
				continue
			}
			sortHTTPRoutes(routes)
			name := r.cfg.Name + "~" + strconv.Itoa(count) + "~" + autogenerated
			out = append(out, KeyedVirtualService{
				Key: key + "/" + h,
				Config: config.Config{
					Meta: routeMeta(rc, r, name),
					Spec: &istio.VirtualService{Hosts: []string{h}, Gateways: []string{p.internalName}, Http: routes},
				},
			})
			count++
		}
	}
	return out
}

func tcpVirtualServices(rc routeCtx, r route, parents []routeParent, meshRoutes, gwRoutes []*istio.TCPRoute) []KeyedVirtualService {
	var out []KeyedVirtualService
	count := 0
	for _, p := range admitted(parents) {
		// one route per listener: a wildcard host is enough
		hosts, routes := []string{"*"}, gwRoutes
		if p.mesh {
			hosts, routes = p.meshHosts, meshRoutes
			if port := p.ref.Port; port != nil {
				routes = withTCPPort(routes, uint32(*port))
			}
		}
		for _, h := range hosts {
			name := fmt.Sprintf("%s~tcp~%d~%s", r.cfg.Name, count, autogenerated)
			vs := config.Config{Meta: routeMeta(rc, r, name),
				Spec: &istio.VirtualService{Hosts: []string{h}, Gateways: []string{p.internalName}, Tcp: routes}}
			out = append(out, KeyedVirtualService{Config: vs})
			count++
		}
	}
	return out
}

func tlsVirtualServices(rc routeCtx, r route, parents []routeParent, meshRoutes, gwRoutes []*istio.TLSRoute) []KeyedVirtualService {
	var out []KeyedVirtualService
	count := 0
	for _, p := range admitted(parents) {
		hosts, routes := hostnameList(r.hostnames), gwRoutes
		switch {
		case p.mesh:
			hosts = p.meshHosts
			routes = withTLSPort(meshRoutes, p.ref.Port, hosts)
		case p.hostname != "":
			// the route serves the intersection of its and the listener's hostnames
			hosts = hostIntersection(hosts, []string{p.hostname})
			routes = constrainTLSRoutes(routes, p.hostname)
		}
		for _, h := range hosts {
			name := fmt.Sprintf("%s~tls~%d~%s", r.cfg.Name, count, autogenerated)
			rs := routes
			if p.mesh {
				rs = routesForHost(routes, h)
			}
			vs := config.Config{Meta: routeMeta(rc, r, name),
				Spec: &istio.VirtualService{Hosts: []string{h}, Gateways: []string{p.internalName}, Tls: rs}}
			out = append(out, KeyedVirtualService{Config: vs})
			count++
		}
	}
	return out
}

// withHTTPPort limits copies of routes to a port (mesh parentRef port).
func withHTTPPort(routes []*istio.HTTPRoute, port uint32) []*istio.HTTPRoute {
	out := make([]*istio.HTTPRoute, 0, len(routes))
	for _, r := range routes {
		c := r.DeepCopy()
		for _, m := range c.Match {
			m.Port = port
		}
		if len(c.Match) == 0 {
			c.Match = []*istio.HTTPMatchRequest{{Port: port}}
		}
		out = append(out, c)
	}
	return out
}

func withTCPPort(routes []*istio.TCPRoute, port uint32) []*istio.TCPRoute {
	out := make([]*istio.TCPRoute, 0, len(routes))
	for _, r := range routes {
		c := r.DeepCopy()
		for _, m := range c.Match {
			m.Port = port
		}
		if len(c.Match) == 0 {
			c.Match = []*istio.L4MatchAttributes{{Port: port}}
		}
		out = append(out, c)
	}
	return out
}

// withTLSPort gives mesh TLS routes without hostnames the parent's hosts as
// SNI hosts, and the parentRef's port.
func withTLSPort(routes []*istio.TLSRoute, port *gatewayv1.PortNumber, hosts []string) []*istio.TLSRoute {
	out := make([]*istio.TLSRoute, 0, len(routes))
	for _, r := range routes {
		c := r.DeepCopy()
		if len(c.Match) == 1 && len(c.Match[0].SniHosts) == 1 && c.Match[0].SniHosts[0] == "*" {
			c.Match[0].SniHosts = hosts
		}
		if port != nil {
			for _, m := range c.Match {
				m.Port = uint32(*port)
			}
		}
		out = append(out, c)
	}
	return out
}

// routesForHost keeps, in routes matching several SNI hosts, those of want.
func routesForHost(routes []*istio.TLSRoute, want string) []*istio.TLSRoute {
	out := make([]*istio.TLSRoute, 0, len(routes))
	for _, r := range routes {
		if len(r.Match) == 1 && len(r.Match[0].SniHosts) > 1 {
			r = r.DeepCopy()
			var sni []string
			for _, h := range r.Match[0].SniHosts {
				if host.Matches(want, h) {
					sni = append(sni, h)
				}
			}
			r.Match[0].SniHosts = sni
		}
		out = append(out, r)
	}
	return out
}

// constrainTLSRoutes narrows the SNI hosts of routes to those within the
// listener's hostname, dropping routes left without any.
func constrainTLSRoutes(routes []*istio.TLSRoute, listenerHost string) []*istio.TLSRoute {
	out := make([]*istio.TLSRoute, 0, len(routes))
	for _, r := range routes {
		c := r.DeepCopy()
		hasHosts := false
		for _, m := range c.Match {
			m.SniHosts = hostIntersection(m.SniHosts, []string{listenerHost})
			hasHosts = hasHosts || len(m.SniHosts) > 0
		}
		if hasHosts || len(c.Match) == 0 {
			out = append(out, c)
		}
	}
	return out
}

// grpcRules converts the rules of a GRPCRoute, one Istio route per match.
func (rc routeCtx) grpcRules(namespace, name string, rules []gatewayv1.GRPCRouteRule) ([]*istio.HTTPRoute, *ConfigError) {
	return perMatch(rules, func(r *gatewayv1.GRPCRouteRule) *[]gatewayv1.GRPCRouteMatch { return &r.Matches },
		func(r gatewayv1.GRPCRouteRule, pos int) (*istio.HTTPRoute, *ConfigError) {
			return rc.grpcRule(r, namespace, name, pos)
		})
}

func (rc routeCtx) grpcRule(r gatewayv1.GRPCRouteRule, namespace, name string, pos int) (*istio.HTTPRoute, *ConfigError) {
	vs := &istio.HTTPRoute{Name: ruleName(r.Name, namespace, name, pos)}
	for _, m := range r.Matches {
		match, err := grpcMatch(m)
		if err != nil {
			return nil, err
		}
		vs.Match = append(vs.Match, match)
	}
	for _, f := range r.Filters {
		switch f.Type {
		case gatewayv1.GRPCRouteFilterRequestHeaderModifier, gatewayv1.GRPCRouteFilterResponseHeaderModifier:
			if err := setHeaders(&vs.Headers, f.Type == gatewayv1.GRPCRouteFilterRequestHeaderModifier,
				f.RequestHeaderModifier, f.ResponseHeaderModifier); err != nil {
				return nil, err
			}
		case gatewayv1.GRPCRouteFilterRequestMirror:
			m, err := rc.mirror(f.RequestMirror)
			if err != nil {
				return nil, err
			}
			vs.Mirrors = append(vs.Mirrors, m)
		default:
			return nil, &ConfigError{Reason: reasonInvalidFilter, Message: fmt.Sprintf("unsupported filter type %q", f.Type)}
		}
	}
	weight := func(b gatewayv1.GRPCBackendRef) *int32 { return b.Weight }
	if weightSum(r.BackendRefs, weight) == 0 {
		vs.DirectResponse = &istio.HTTPDirectResponse{Status: 500}
		return vs, nil
	}
	refs := make([]gatewayv1.HTTPBackendRef, len(r.BackendRefs))
	for i, b := range r.BackendRefs {
		refs[i].BackendRef = b.BackendRef
		for _, f := range b.Filters {
			refs[i].Filters = append(refs[i].Filters, gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterType(f.Type),
				RequestHeaderModifier: f.RequestHeaderModifier, ResponseHeaderModifier: f.ResponseHeaderModifier})
		}
	}
	route, backendErr, err := rc.httpDestinations(refs)
	if err != nil {
		return nil, err
	}
	vs.Route = route
	return vs, backendErr
}

// tcpRules converts the rules of a TCPRoute.
func (rc routeCtx) tcpRules(rules []gatewayv1alpha2.TCPRouteRule) ([]*istio.TCPRoute, *ConfigError) {
	var out []*istio.TCPRoute
	var routeErr *ConfigError
	for _, r := range rules {
		if weightSum(r.BackendRefs, backendWeight) == 0 {
			out = append(out, &istio.TCPRoute{Route: zeroWeightDestination()})
			continue
		}
		dst, backendErr, err := rc.l4Destinations(r.BackendRefs)
		if err != nil {
			return nil, err
		}
		if backendErr != nil {
			routeErr = backendErr
		}
		out = append(out, &istio.TCPRoute{Route: dst})
	}
	return out, routeErr
}

// tlsRules converts the rules of a TLSRoute: SNI matches on the route's
// hostnames.
func (rc routeCtx) tlsRules(hostnames []gatewayv1.Hostname, rules []gatewayv1.TLSRouteRule) ([]*istio.TLSRoute, *ConfigError) {
	var out []*istio.TLSRoute
	var routeErr *ConfigError
	for _, r := range rules {
		if weightSum(r.BackendRefs, backendWeight) == 0 {
			out = append(out, &istio.TLSRoute{Route: zeroWeightDestination()})
			continue
		}
		dst, backendErr, err := rc.l4Destinations(r.BackendRefs)
		if err != nil {
			return nil, err
		}
		if backendErr != nil {
			routeErr = backendErr
		}
		out = append(out, &istio.TLSRoute{Match: []*istio.TLSMatchAttributes{{SniHosts: hostnameList(hostnames)}}, Route: dst})
	}
	return out, routeErr
}

func backendWeight(b gatewayv1.BackendRef) *int32 { return b.Weight }
