package validation

import (
	"fmt"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/host"
)

// netMeshGateway is the reserved gateway name for sidecars.
const netMeshGateway = "mesh"

// ValidateVirtualService checks a VirtualService. A VirtualService without
// hosts is a delegate: it may only hold HTTP routes and no gateways.
func ValidateVirtualService(cfg config.Config) (Warning, error) {
	vs, ok := cfg.Spec.(*networking.VirtualService)
	if !ok {
		return nil, netCannotCast("VirtualService", cfg.Spec)
	}
	if vs == nil {
		vs = &networking.VirtualService{}
	}
	r := &Report{}
	spec := Path("spec")
	delegate := len(vs.GetHosts()) == 0
	if delegate {
		if len(vs.GetGateways()) != 0 {
			r.Errorf(spec.Field("gateways"), "delegate virtual service must have no gateways specified")
		}
		if len(vs.GetTls()) != 0 {
			r.Errorf(spec.Field("tls"), "delegate virtual service must have no tls route specified")
		}
		if len(vs.GetTcp()) != 0 {
			r.Errorf(spec.Field("tcp"), "delegate virtual service must have no tcp route specified")
		}
	}
	vsCheckGatewayNames(r, spec.Field("gateways"), vs.GetGateways())
	toGateway := vsAppliesToGateway(vs)
	vsCheckHosts(r, spec.Field("hosts"), vs, toGateway)
	if !toGateway {
		vsCheckNoJWTClaimRouting(r, spec.Field("http"), vs.GetHttp(), vs.GetGateways())
	}
	if len(vs.GetHttp()) == 0 && len(vs.GetTcp()) == 0 && len(vs.GetTls()) == 0 {
		r.Errorf(spec, "http, tcp or tls must be provided in virtual service")
	}
	for i, h := range vs.GetHttp() {
		vsCheckHTTPRoute(r, spec.Field("http").Index(i), h, delegate)
	}
	for i, t := range vs.GetTls() {
		vsCheckTLSRoute(r, spec.Field("tls").Index(i), t, vs, toGateway)
	}
	for i, t := range vs.GetTcp() {
		vsCheckTCPRoute(r, spec.Field("tcp").Index(i), t)
	}
	checkExportTo(r, spec.Field("exportTo"), cfg.Namespace, vs.GetExportTo(), false, false)
	vsCheckUnreachable(r, spec, vs)
	return r.Result()
}

// vsAppliesToGateway reports whether the VirtualService is bound only to
// gateways (gateways set and "mesh" not among them).
func vsAppliesToGateway(vs *networking.VirtualService) bool {
	if len(vs.GetGateways()) == 0 {
		return false
	}
	for _, g := range vs.GetGateways() {
		if g == netMeshGateway {
			return false
		}
	}
	return true
}

// vsCheckGatewayNames validates gateway references: "mesh", "name",
// "namespace/name" or the legacy "name.namespace[.svc...]" form.
func vsCheckGatewayNames(r *Report, p Path, names []string) {
	for i, name := range names {
		ip := p.Index(i)
		ns, gw, ok := strings.Cut(name, "/")
		if !ok {
			if strings.Contains(name, ".") {
				parts := strings.Split(name, ".")
				r.Warnf(ip, "using legacy gatewayName format %q; prefer the <namespace>/<name> format: %q",
					name, parts[1]+"/"+parts[0])
			}
			if err := netCheckFQDN(name); err != nil {
				r.Errorf(ip, "invalid gateway name %q: %v", name, err)
			}
			continue
		}
		if ns == "" || gw == "" {
			r.Errorf(ip, "gateway %q: config namespace and gateway name cannot be empty", name)
			continue
		}
		if !netIsLabel(ns) {
			r.Errorf(ip, "gateway %q: invalid value for namespace: %q", name, ns)
		}
		if !netIsLabel(gw) {
			r.Errorf(ip, "gateway %q: invalid value for gateway name: %q", name, gw)
		}
	}
}

// vsCheckHosts validates hosts (wildcards, short names and IPs are allowed;
// "*" alone only for gateway-bound services) and rejects overlapping hosts.
func vsCheckHosts(r *Report, p Path, vs *networking.VirtualService, toGateway bool) {
	hosts := vs.GetHosts()
	allValid := true
	for i, h := range hosts {
		if err := netCheckWildcardHost(h); err != nil {
			if !netIsIP(h) {
				r.Errorf(p.Index(i), "invalid host %q: %v", h, err)
				allValid = false
			}
			continue
		}
		if h == "*" && !toGateway {
			r.Errorf(p.Index(i), "wildcard host * is not allowed for virtual services bound to the mesh gateway")
			allValid = false
		}
	}
	if !allValid {
		return
	}
	for i := range hosts {
		for j := i + 1; j < len(hosts); j++ {
			if host.Matches(hosts[i], hosts[j]) {
				r.Errorf(p.Index(j), "duplicate hosts in virtual service: %s & %s", hosts[i], hosts[j])
			}
		}
	}
}

// vsCheckNoJWTClaimRouting rejects @request.auth.claims header matches on
// VirtualServices that also apply to sidecars.
func vsCheckNoJWTClaimRouting(r *Report, p Path, routes []*networking.HTTPRoute, gateways []string) {
	for i, h := range routes {
		for j, m := range h.GetMatch() {
			mp := p.Index(i).Field("match").Index(j)
			for _, k := range netSortedKeys(m.GetHeaders()) {
				if netIsJWTClaimHeader(k) {
					r.Errorf(mp.Field("headers").Key(k), "JWT claim based routing (key: %s) is only supported for gateway, found no gateways: %v", k, gateways)
				}
			}
			for _, k := range netSortedKeys(m.GetWithoutHeaders()) {
				if netIsJWTClaimHeader(k) {
					r.Errorf(mp.Field("withoutHeaders").Key(k), "JWT claim based routing (key: %s) is only supported for gateway, found no gateways: %v", k, gateways)
				}
			}
		}
	}
}

// vsCheckTLSRoute requires matches with SNI hosts that belong to the
// VirtualService, and destinations.
func vsCheckTLSRoute(r *Report, p Path, t *networking.TLSRoute, vs *networking.VirtualService, toGateway bool) {
	if t == nil {
		r.Errorf(p, "tls route may not be null")
		return
	}
	if len(t.GetMatch()) == 0 {
		r.Errorf(p.Field("match"), "TLS route must have at least one match condition")
	}
	for i, m := range t.GetMatch() {
		mp := p.Field("match").Index(i)
		if m == nil {
			r.Errorf(mp, "TLS match may not be null")
			continue
		}
		if len(m.GetSniHosts()) == 0 {
			r.Errorf(mp.Field("sniHosts"), "TLS match must have at least one SNI host")
		}
		for j, sni := range m.GetSniHosts() {
			vsCheckSNIHost(r, mp.Field("sniHosts").Index(j), sni, vs.GetHosts())
		}
		for j, s := range m.GetDestinationSubnets() {
			r.Add(mp.Field("destinationSubnets").Index(j), CheckIPOrCIDR(s))
		}
		vsCheckL4Match(r, mp, m.GetPort(), m.GetSourceLabels(), m.GetGateways(), m.GetSourceNamespace())
	}
	if len(t.GetRoute()) == 0 {
		r.Errorf(p.Field("route"), "TLS route is required")
	}
	vsCheckRouteDestinations(r, p.Field("route"), t.GetRoute())
}

// vsCheckSNIHost validates one SNI host and requires it to be covered by a
// host of the VirtualService.
func vsCheckSNIHost(r *Report, p Path, sni string, hosts []string) {
	if err := netCheckWildcardHost(sni); err != nil {
		if netIsIP(sni) {
			r.Warnf(p, "using an IP address (%q) goes against SNI spec and most clients do not support this", sni)
			return
		}
		r.Errorf(p, "invalid SNI host %q: %v", sni, err)
		return
	}
	for _, h := range hosts {
		if host.SubsetOf(sni, h) {
			return
		}
	}
	r.Errorf(p, "SNI host %q is not a compatible subset of any of the virtual service hosts: [%s]",
		sni, strings.Join(hosts, ", "))
}

// vsCheckTCPRoute validates matches (optional) and requires destinations.
func vsCheckTCPRoute(r *Report, p Path, t *networking.TCPRoute) {
	if t == nil {
		r.Errorf(p, "tcp route may not be null")
		return
	}
	for i, m := range t.GetMatch() {
		mp := p.Field("match").Index(i)
		if m == nil {
			r.Errorf(mp, "tcp match may not be nil")
			continue
		}
		for j, s := range m.GetDestinationSubnets() {
			r.Add(mp.Field("destinationSubnets").Index(j), CheckIPOrCIDR(s))
		}
		vsCheckL4Match(r, mp, m.GetPort(), m.GetSourceLabels(), m.GetGateways(), m.GetSourceNamespace())
	}
	if len(t.GetRoute()) == 0 {
		r.Errorf(p.Field("route"), "TCP route is required")
	}
	vsCheckRouteDestinations(r, p.Field("route"), t.GetRoute())
}

// vsCheckL4Match validates the fields shared by all match kinds.
func vsCheckL4Match(r *Report, p Path, port uint32, labels map[string]string, gateways []string, ns string) {
	if port != 0 {
		r.Add(p.Field("port"), CheckPort(port))
	}
	r.Add(p.Field("sourceLabels"), CheckLabels(labels))
	vsCheckGatewayNames(r, p.Field("gateways"), gateways)
	if ns != "" && !netIsLabel(ns) {
		r.Errorf(p.Field("sourceNamespace"), "sourceNamespace match %s is invalid", ns)
	}
}

// vsCheckRouteDestinations validates L4 weighted destinations.
func vsCheckRouteDestinations(r *Report, p Path, dests []*networking.RouteDestination) {
	var total int64
	for i, d := range dests {
		dp := p.Index(i)
		if d == nil {
			r.Errorf(dp, "weight may not be nil")
			continue
		}
		vsCheckDestinationRequired(r, dp.Field("destination"), d.GetDestination())
		total += vsCheckWeight(r, dp.Field("weight"), d.GetWeight())
	}
	if len(dests) > 1 && total == 0 {
		r.Errorf(p, "total destination weight = 0")
	}
}

// vsCheckWeight rejects negative weights; weights are relative
// (weight/sum), so they need not add up to 100.
func vsCheckWeight(r *Report, p Path, w int32) int64 {
	if w < 0 {
		r.Errorf(p, "weight %d < 0", w)
		return 0
	}
	return int64(w)
}

func vsCheckDestinationRequired(r *Report, p Path, d *networking.Destination) {
	if d == nil {
		r.Errorf(p, "destination is required")
		return
	}
	netCheckDestination(r, p, d)
}

// vsAuthorityHeader reports whether a header sets the authority.
func vsAuthorityHeader(k string) bool {
	return strings.EqualFold(k, ":authority") || strings.EqualFold(k, "host")
}

// vsCheckAuthorityOnce rejects setting the authority in more than one place.
func vsCheckAuthorityOnce(r *Report, p Path, h *networking.HTTPRoute) {
	current := h.GetRewrite().GetAuthority()
	req := h.GetHeaders().GetRequest()
	for _, m := range []map[string]string{req.GetSet(), req.GetAdd()} {
		for _, k := range netSortedKeys(m) {
			if !vsAuthorityHeader(k) {
				continue
			}
			if current != "" {
				r.Errorf(p.Field("headers"), "authority header cannot be set multiple times: have %q, attempting to set %q", current, m[k])
				return
			}
			current = m[k]
		}
	}
}

// vsCheckHTTPRoute validates one HTTP route. delegate is true for the routes
// of a delegate VirtualService (one without hosts).
func vsCheckHTTPRoute(r *Report, p Path, h *networking.HTTPRoute, delegate bool) {
	if h == nil {
		r.Errorf(p, "http route may not be null")
		return
	}
	vsCheckHTTPActions(r, p, h, delegate)
	for i, m := range h.GetMatch() {
		vsCheckHTTPMatch(r, p.Field("match").Index(i), m)
	}
	vsCheckHeaderOps(r, p.Field("headers"), h.GetHeaders())
	vsCheckCORS(r, p.Field("corsPolicy"), h.GetCorsPolicy())
	vsCheckFault(r, p.Field("fault"), h.GetFault())
	if mp := h.GetMirrorPercent(); mp != nil { //nolint:staticcheck // deprecated field is still accepted
		if mp.GetValue() > 100 {
			r.Errorf(p.Field("mirrorPercent"), "mirror_percent must have a max value of 100 (it has %d)", mp.GetValue())
		}
		r.Warnf(p.Field("mirrorPercent"), `using deprecated setting "mirrorPercent", use "mirrorPercentage" instead`)
	}
	if mp := h.GetMirrorPercentage(); mp != nil {
		if v := mp.GetValue(); v > 100 {
			r.Errorf(p.Field("mirrorPercentage"), "mirror_percentage must have a max value of 100 (it has %f)", v)
		} else if v < 0 {
			r.Errorf(p.Field("mirrorPercentage"), "mirror_percentage must have a min value of 0 (it has %f)", v)
		}
	}
	netCheckDestination(r, p.Field("mirror"), h.GetMirror())
	for i, m := range h.GetMirrors() {
		mp := p.Field("mirrors").Index(i)
		if m == nil {
			r.Errorf(mp, "mirror cannot be null")
			continue
		}
		if m.GetDestination() == nil {
			r.Errorf(mp.Field("destination"), "destination is required for mirrors")
			continue
		}
		netCheckDestination(r, mp.Field("destination"), m.GetDestination())
		if m.GetPercentage() != nil {
			if v := m.GetPercentage().GetValue(); v > 100 {
				r.Errorf(mp.Field("percentage"), "mirror percentage must have a max value of 100 (it has %f)", v)
			} else if v < 0 {
				r.Errorf(mp.Field("percentage"), "mirror percentage must have a min value of 0 (it has %f)", v)
			}
		}
	}
	vsCheckRedirect(r, p.Field("redirect"), h.GetRedirect(), h.GetMatch())
	vsCheckDirectResponse(r, p.Field("directResponse"), h.GetDirectResponse())
	vsCheckRetries(r, p.Field("retries"), h.GetRetries())
	vsCheckRewrite(r, p.Field("rewrite"), h.GetRewrite())
	vsCheckAuthorityOnce(r, p, h)
	vsCheckHTTPDestinations(r, p.Field("route"), h.GetRoute())
	if h.GetTimeout() != nil {
		r.Add(p.Field("timeout"), netCheckDuration(h.GetTimeout()))
	}
}

// vsCheckHTTPActions enforces that a route has exactly one action: route
// destinations, a redirect, a direct response or (root routes) a delegate.
func vsCheckHTTPActions(r *Report, p Path, h *networking.HTTPRoute, delegate bool) {
	if h.GetDelegate() != nil && !delegate {
		if h.GetRedirect() != nil {
			r.Errorf(p.Field("redirect"), "root HTTP route %s must not specify redirect", h.GetName())
		}
		if h.GetRoute() != nil {
			r.Errorf(p.Field("route"), "root HTTP route %s must not specify route", h.GetName())
		}
		if h.GetDirectResponse() != nil {
			r.Errorf(p.Field("directResponse"), "root HTTP route %s must not specify directResponse", h.GetName())
		}
		if h.GetDelegate().GetName() == "" {
			r.Errorf(p.Field("delegate").Field("name"), "delegate name is required")
		} else if !netIsLabel(h.GetDelegate().GetName()) && CheckFQDN(h.GetDelegate().GetName()) != nil {
			r.Errorf(p.Field("delegate").Field("name"), "invalid delegate name %q", h.GetDelegate().GetName())
		}
		if ns := h.GetDelegate().GetNamespace(); ns != "" && !netIsLabel(ns) {
			r.Errorf(p.Field("delegate").Field("namespace"), "invalid delegate namespace %q", ns)
		}
		return
	}
	if delegate && h.GetDelegate() != nil {
		r.Errorf(p.Field("delegate"), "delegate HTTP route cannot contain delegate")
	}
	switch {
	case h.GetRedirect() != nil:
		vsConflicts(r, p, "redirect", len(h.GetRoute()) > 0, h.GetFault() != nil, h.GetRewrite() != nil, h.GetDirectResponse() != nil)
	case h.GetDirectResponse() != nil:
		vsConflicts(r, p, "direct_response", len(h.GetRoute()) > 0, h.GetFault() != nil, h.GetRewrite() != nil, false)
	case len(h.GetRoute()) == 0:
		r.Errorf(p, "HTTP route, redirect or direct_response is required")
	}
	if h.GetMirror() != nil && len(h.GetMirrors()) > 0 {
		r.Errorf(p, "HTTP route cannot contain both mirror and mirrors")
	}
}

func vsConflicts(r *Report, p Path, action string, route, fault, rewrite, direct bool) {
	for _, c := range []struct {
		set   bool
		field string
		what  string
	}{{route, "route", "HTTP route"}, {fault, "fault", "HTTP route"}, {rewrite, "rewrite", "HTTP route rule"},
		{direct, "direct_response", "HTTP route rule"}} {
		if c.set {
			r.Errorf(p, "%s cannot contain both %s and %s", c.what, c.field, action)
		}
	}
}

// vsCheckHTTPMatch validates one HTTP match request.
func vsCheckHTTPMatch(r *Report, p Path, m *networking.HTTPMatchRequest) {
	if m == nil {
		return
	}
	vsCheckHeaderMatches(r, p.Field("headers"), m.GetHeaders(), false)
	vsCheckHeaderMatches(r, p.Field("withoutHeaders"), m.GetWithoutHeaders(), true)
	// an empty uri prefix is allowed (it matches everything); the other
	// string matches must not have empty prefixes
	netCheckStringMatch(r, p.Field("uri"), m.GetUri(), "uri", true, false)
	netCheckStringMatch(r, p.Field("scheme"), m.GetScheme(), "scheme", false, false)
	netCheckStringMatch(r, p.Field("method"), m.GetMethod(), "method", false, false)
	netCheckStringMatch(r, p.Field("authority"), m.GetAuthority(), "authority", false, false)
	for _, k := range netSortedKeys(m.GetQueryParams()) {
		qp := m.GetQueryParams()[k]
		if qp == nil {
			r.Errorf(p.Field("queryParams").Key(k), "query param match %q cannot be null", k)
			continue
		}
		netCheckStringMatch(r, p.Field("queryParams").Key(k), qp, "queryParams", false, true)
	}
	vsCheckL4Match(r, p, m.GetPort(), m.GetSourceLabels(), m.GetGateways(), m.GetSourceNamespace())
}

func vsCheckHeaderMatches(r *Report, p Path, headers map[string]*networking.StringMatch, without bool) {
	for _, k := range netSortedKeys(headers) {
		hp := p.Key(k)
		sm := headers[k]
		if !netIsJWTClaimHeader(k) && !vsPseudoHeaders[k] {
			if err := netCheckTokenHeaderName(k); err != nil {
				r.Add(hp, err)
			} else if strings.ToLower(k) != k {
				r.Warnf(hp, "header name %q should be lowercase", k)
			}
		}
		if sm == nil {
			r.Errorf(hp, "header match %v cannot be null", k)
			continue
		}
		// for withoutHeaders, regex "*" means "header present", not a RE2 regex
		if without && sm.GetRegex() == "*" {
			continue
		}
		where := "headers"
		if without {
			where = "withoutHeaders"
		}
		netCheckStringMatch(r, hp, sm, where, false, true)
	}
}

// vsPseudoHeaders are the HTTP/2 pseudo headers a header match may name.
var vsPseudoHeaders = map[string]bool{":method": true, ":scheme": true, ":authority": true, ":path": true, ":status": true}

// vsCheckHeaderOps validates request/response header manipulation. Pseudo
// headers (":...") and Host may not be touched, except that the request
// authority may be set.
func vsCheckHeaderOps(r *Report, p Path, h *networking.Headers) {
	for _, side := range []struct {
		name string
		ops  *networking.Headers_HeaderOperations
	}{{"request", h.GetRequest()}, {"response", h.GetResponse()}} {
		sp := p.Field(side.name)
		for _, op := range []string{"set", "add"} {
			m := side.ops.GetSet()
			if op == "add" {
				m = side.ops.GetAdd()
			}
			for _, k := range netSortedKeys(m) {
				kp := sp.Field(op).Key(k)
				r.Add(kp, vsHeaderOpName(k, side.name == "request"))
				r.Add(kp, netCheckHeaderValue(m[k]))
			}
		}
		for i, k := range side.ops.GetRemove() {
			r.Add(sp.Field("remove").Index(i), vsHeaderOpName(k, false))
		}
	}
}

func vsHeaderOpName(name string, authorityOK bool) error {
	switch {
	case name == "":
		return fmt.Errorf("header name cannot be empty")
	case authorityOK && vsAuthorityHeader(name):
		return nil
	case strings.EqualFold(name, "host"):
		return fmt.Errorf("invalid header %q: cannot set Host header", name)
	case strings.HasPrefix(name, ":"):
		return fmt.Errorf(`invalid header %q: header cannot have ":" prefix`, name)
	}
	return nil
}

// vsCheckHTTPDestinations validates weighted HTTP destinations.
func vsCheckHTTPDestinations(r *Report, p Path, dests []*networking.HTTPRouteDestination) {
	var total int64
	for i, d := range dests {
		dp := p.Index(i)
		if d == nil {
			r.Errorf(dp, "weight may not be nil")
			continue
		}
		vsCheckDestinationRequired(r, dp.Field("destination"), d.GetDestination())
		vsCheckHeaderOps(r, dp.Field("headers"), d.GetHeaders())
		total += vsCheckWeight(r, dp.Field("weight"), d.GetWeight())
	}
	if len(dests) > 1 && total == 0 {
		r.Errorf(p, "total destination weight = 0")
	}
}

func vsCheckRedirect(r *Report, p Path, rd *networking.HTTPRedirect, matches []*networking.HTTPMatchRequest) {
	if rd == nil {
		return
	}
	if rd.GetUri() == "" && rd.GetAuthority() == "" && rd.GetRedirectPort() == nil &&
		rd.GetScheme() == "" && rd.GetPrefixRewrite() == "" {
		r.Errorf(p, "redirect must specify URI, authority, scheme, or port")
	}
	if rd.GetUri() != "" && rd.GetPrefixRewrite() != "" {
		r.Errorf(p, "redirect may only specify one of uri or prefix_rewrite")
	}
	if rd.GetPrefixRewrite() != "" {
		for _, m := range matches {
			if _, prefix := m.GetUri().GetMatchType().(*networking.StringMatch_Prefix); m.GetUri() != nil && !prefix {
				r.Errorf(p.Field("prefixRewrite"), "redirect prefix_rewrite requires all URI matches to use prefix match type")
				break
			}
		}
	}
	if c := rd.GetRedirectCode(); c != 0 && (c < 300 || c > 399) {
		r.Errorf(p.Field("redirectCode"), "%d is not a valid redirect code, must be 3xx", c)
	}
	if s := rd.GetScheme(); s != "" && s != "http" && s != "https" {
		r.Errorf(p.Field("scheme"), `invalid redirect scheme, must be "http" or "https" (got %q)`, s)
	}
	if _, ok := rd.GetRedirectPort().(*networking.HTTPRedirect_Port); ok {
		r.Add(p.Field("port"), CheckPort(rd.GetPort()))
	}
}

func vsCheckDirectResponse(r *Report, p Path, d *networking.HTTPDirectResponse) {
	if d == nil {
		return
	}
	size := len(d.GetBody().GetString_()) + len(d.GetBody().GetBytes())
	switch {
	case size > 1<<20:
		r.Errorf(p.Field("body"), "large direct_responses may impact control plane performance, must be less than 1MB")
	case size > 100<<10:
		r.Warnf(p.Field("body"), "large direct_responses may impact control plane performance")
	}
	r.Add(p.Field("status"), vsStatusErr(int64(d.GetStatus())))
}

func vsCheckRewrite(r *Report, p Path, rw *networking.HTTPRewrite) {
	if rw == nil {
		return
	}
	if rw.GetUri() != "" && rw.GetUriRegexRewrite() != nil {
		r.Errorf(p, "rewrite may only contain one of URI or UriRegexRewrite")
	}
	if rw.GetUri() == "" && rw.GetUriRegexRewrite() == nil && rw.GetAuthority() == "" {
		r.Errorf(p, "rewrite must specify at least one of URI, UriRegexRewrite, or authority. Only one of URI or UriRegexRewrite may be specified")
	}
	// Istio joins these below "UriRegexRewrite has errors"
	if rr := rw.GetUriRegexRewrite(); rr != nil {
		rp := p.Field("uriRegexRewrite")
		if rr.GetMatch() == "" || rr.GetRewrite() == "" {
			r.Errorf(rp, "UriRegexRewrite has errors: UriRegexRewrite requires both Rewrite and Match fields to be specified")
		}
		if rr.GetMatch() != "" {
			if err := netCheckRegex(rr.GetMatch(), "HTTPRewrite.UriRegexRewrite.Match"); err != nil {
				r.Errorf(rp.Field("match"), "UriRegexRewrite has errors: %v", err)
			}
		}
	}
}
