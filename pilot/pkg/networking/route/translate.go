package route

import (
	"regexp"
	"strconv"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/fault/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// translateRoute builds one Envoy route for an HTTP route and one of its
// matches (nil: match everything), as Istio's TranslateRoute
// (pilot/pkg/networking/core/route/route.go) does: the route is named
// "<route>.<match>" when the match has a name, takes the match's stat
// prefix, and every route, redirects and direct responses too, carries the
// trace decorator GetRouteOperation names.
func translateRoute(hr *networking.HTTPRoute, m *networking.HTTPMatchRequest, port int, vs *config.Config, o Options) *routev3.Route {
	gw := GatewaySemantics(vs)
	name := hr.Name
	if m != nil && m.Name != "" {
		name += "." + m.Name
	}
	r := &routev3.Route{Name: name, Match: translateMatch(m, gw), StatPrefix: m.GetStatPrefix()}
	switch {
	case hr.Redirect != nil:
		ra, ok := redirect(hr.Redirect, port, o.IsTLS)
		if !ok {
			// a redirect code Envoy has no value for: Istio leaves the
			// route without an action, which Envoy rejects; no route
			// rather than a rejected configuration
			return nil
		}
		r.Action = &routev3.Route_Redirect{Redirect: ra}
	case hr.DirectResponse != nil:
		dr := &routev3.DirectResponseAction{Status: hr.DirectResponse.Status}
		if b := hr.DirectResponse.Body; b != nil {
			if s := b.GetString_(); s != "" {
				dr.Body = &core.DataSource{Specifier: &core.DataSource_InlineString{InlineString: s}}
			} else if by := b.GetBytes(); by != nil {
				dr.Body = &core.DataSource{Specifier: &core.DataSource_InlineBytes{InlineBytes: by}}
			}
		}
		r.Action = &routev3.Route_DirectResponse{DirectResponse: dr}
	case len(hr.Route) > 0:
		ra := routeAction(hr, port, vs, r.Match, o)
		r.Action = &routev3.Route_Route{Route: ra}
	default:
		return nil
	}
	r.Decorator = &routev3.Decorator{Operation: operation(r, vs.Name, port)}
	applyHeaders(r, hr.Headers)
	if f := fault(hr.Fault); f != nil {
		a := protoconv.MessageToAny(f)
		r.TypedPerFilterConfig = map[string]*anypb.Any{"envoy.filters.http.fault": a}
	}
	if c := cors(hr.CorsPolicy); c != nil {
		a := protoconv.MessageToAny(c)
		if r.TypedPerFilterConfig == nil {
			r.TypedPerFilterConfig = map[string]*anypb.Any{}
		}
		r.TypedPerFilterConfig["envoy.filters.http.cors"] = a
	}
	return r
}

// cors translates a CORS policy into the per-route CORS filter config, as
// Istio's TranslateCORSPolicy (pilot/pkg/networking/core/route/route.go)
// does: the filter enabled explicitly for 100% of requests (the filter
// config of the HTTP connection manager leaves it off), preflights that
// match no origin forwarded unless unmatchedPreflights is IGNORE, the
// deprecated allowOrigin list taken as exact origins when allowOrigins is
// unset.
func cors(c *networking.CorsPolicy) *corsv3.CorsPolicy {
	if c == nil {
		return nil
	}
	out := &corsv3.CorsPolicy{
		AllowMethods:                 strings.Join(c.AllowMethods, ","),
		AllowHeaders:                 strings.Join(c.AllowHeaders, ","),
		ExposeHeaders:                strings.Join(c.ExposeHeaders, ","),
		AllowCredentials:             c.AllowCredentials,
		ForwardNotMatchingPreflights: wrapperspb.Bool(c.GetUnmatchedPreflights() != networking.CorsPolicy_IGNORE),
		FilterEnabled: &core.RuntimeFractionalPercent{
			DefaultValue: &typev3.FractionalPercent{Numerator: 100, Denominator: typev3.FractionalPercent_HUNDRED},
		},
	}
	if c.MaxAge != nil {
		out.MaxAge = strconv.FormatInt(c.MaxAge.GetSeconds(), 10)
	}
	switch {
	case c.AllowOrigins != nil:
		for _, o := range c.AllowOrigins {
			if sm := stringMatcher(o); sm != nil {
				out.AllowOriginStringMatch = append(out.AllowOriginStringMatch, sm)
			}
		}
	case c.AllowOrigin != nil: //nolint:staticcheck // deprecated field still honoured, as Istio does
		for _, o := range c.AllowOrigin { //nolint:staticcheck
			out.AllowOriginStringMatch = append(out.AllowOriginStringMatch,
				&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: o}})
		}
	}
	return out
}

func translateMatch(m *networking.HTTPMatchRequest, gatewaySemantics bool) *routev3.RouteMatch {
	rm := &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}
	if m == nil {
		return rm
	}
	rm.CaseSensitive = wrapperspb.Bool(!m.IgnoreUriCase)
	if u := m.Uri; u != nil {
		switch x := u.MatchType.(type) {
		case *networking.StringMatch_Exact:
			rm.PathSpecifier = &routev3.RouteMatch_Path{Path: x.Exact}
		case *networking.StringMatch_Prefix:
			if gatewaySemantics && x.Prefix != "/" {
				// Gateway API PathPrefix matches whole path segments
				rm.PathSpecifier = &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: strings.TrimSuffix(x.Prefix, "/")}
			} else {
				rm.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: x.Prefix}
			}
		case *networking.StringMatch_Regex:
			rm.PathSpecifier = &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: x.Regex}}
		}
	}
	for _, name := range sortedKeys(m.Headers) {
		rm.Headers = append(rm.Headers, headerMatcher(name, m.Headers[name]))
	}
	if m.Method != nil {
		rm.Headers = append(rm.Headers, headerMatcher(":method", m.Method))
	}
	if m.Authority != nil {
		rm.Headers = append(rm.Headers, headerMatcher(":authority", m.Authority))
	}
	if m.Scheme != nil {
		rm.Headers = append(rm.Headers, headerMatcher(":scheme", m.Scheme))
	}
	for _, name := range sortedKeys(m.WithoutHeaders) {
		h := headerMatcher(name, m.WithoutHeaders[name])
		h.InvertMatch = true
		rm.Headers = append(rm.Headers, h)
	}
	for _, name := range sortedKeys(m.QueryParams) {
		qp := &routev3.QueryParameterMatcher{Name: name}
		if sm := stringMatcher(m.QueryParams[name]); sm != nil {
			qp.QueryParameterMatchSpecifier = &routev3.QueryParameterMatcher_StringMatch{StringMatch: sm}
		} else {
			qp.QueryParameterMatchSpecifier = &routev3.QueryParameterMatcher_PresentMatch{PresentMatch: true}
		}
		rm.QueryParameters = append(rm.QueryParameters, qp)
	}
	return rm
}

func stringMatcher(s *networking.StringMatch) *matcherv3.StringMatcher {
	switch x := s.GetMatchType().(type) {
	case *networking.StringMatch_Exact:
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: x.Exact}}
	case *networking.StringMatch_Prefix:
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: x.Prefix}}
	case *networking.StringMatch_Regex:
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: x.Regex}}}
	}
	return nil
}

func headerMatcher(name string, s *networking.StringMatch) *routev3.HeaderMatcher {
	h := &routev3.HeaderMatcher{Name: name}
	if sm := stringMatcher(s); sm != nil {
		h.HeaderMatchSpecifier = &routev3.HeaderMatcher_StringMatch{StringMatch: sm}
	} else {
		h.HeaderMatchSpecifier = &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}
	}
	return h
}

// DestinationPort is the port of a destination's cluster: the port the
// destination names, else the service's only port, else the route's port.
func DestinationPort(d *networking.Destination, svc *model.Service, port int) int {
	if n := d.GetPort().GetNumber(); n != 0 {
		return int(n)
	}
	if p, ok := SinglePort(svc); ok {
		return p
	}
	return port
}

// SinglePort is all routes read of a service Options.LookupService finds:
// its port when it has exactly one.
func SinglePort(svc *model.Service) (int, bool) {
	if svc != nil && len(svc.Ports) == 1 {
		return svc.Ports[0].Port, true
	}
	return 0, false
}

// destinationCluster names the cluster of a destination (see
// DestinationPort).
func destinationCluster(d *networking.Destination, port int, o Options) string {
	var svc *model.Service
	if o.LookupService != nil && d.GetPort().GetNumber() == 0 {
		svc = o.LookupService(d.Host)
	}
	return cluster.SubsetKey(cluster.Outbound, d.Subset, d.Host, DestinationPort(d, svc, port))
}

// operation is the trace operation of a route, as Istio names it:
// <host>:<port><path> for one destination cluster, else
// <VirtualService>:<route port><path>, the path being the prefix with "*",
// the exact path or the regex ("/*" for other matches).
func operation(r *routev3.Route, vsName string, port int) string {
	path := "/*"
	switch m := r.GetMatch().GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		path = m.Prefix + "*"
	case *routev3.RouteMatch_Path:
		path = m.Path
	case *routev3.RouteMatch_SafeRegex:
		path = m.SafeRegex.GetRegex()
	}
	if c := r.GetRoute().GetCluster(); c != "" {
		if _, _, h, p, ok := cluster.ParseSubsetKey(c); ok {
			return h + ":" + strconv.Itoa(p) + path
		}
	}
	return vsName + ":" + strconv.Itoa(port) + path
}

func routeAction(hr *networking.HTTPRoute, port int, vs *config.Config, match *routev3.RouteMatch, o Options) *routev3.RouteAction {
	ra := &routev3.RouteAction{Timeout: durationOrZero(hr.Timeout), MaxGrpcTimeout: durationOrZero(hr.Timeout)}
	if GatewaySemantics(vs) {
		// a backend that does not exist answers 500, as the Gateway API asks
		ra.ClusterNotFoundResponseCode = routev3.RouteAction_INTERNAL_SERVER_ERROR
	}
	hash := func(d *networking.Destination) *networking.LoadBalancerSettings_ConsistentHashLB {
		if o.Hash == nil {
			return nil
		}
		return o.Hash(d)
	}
	hashed := false
	if len(hr.Route) == 1 {
		d := hr.Route[0].Destination
		ra.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: destinationCluster(d, port, o)}
		if hp := hashPolicy(hash(d)); hp != nil {
			ra.HashPolicy, hashed = append(ra.HashPolicy, hp), true
		}
	} else {
		wc := &routev3.WeightedCluster{}
		for _, dst := range hr.Route {
			if dst.Weight == 0 {
				continue // a zero weight among others takes nothing: Istio leaves it out
			}
			wc.Clusters = append(wc.Clusters, &routev3.WeightedCluster_ClusterWeight{
				Name: destinationCluster(dst.Destination, port, o), Weight: wrapperspb.UInt32(uint32(dst.Weight))})
			if hp := hashPolicy(hash(dst.Destination)); hp != nil {
				ra.HashPolicy = append(ra.HashPolicy, hp)
			}
		}
		ra.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: wc}
	}
	ra.RetryPolicy = retryPolicy(hr.Retries, o.MeshRetry, hashed)
	if rw := hr.Rewrite; rw != nil {
		switch {
		case rw.Uri == "/" && GatewaySemantics(vs) && match.GetPathSeparatedPrefix() != "":
			// Gateway API ReplacePrefixMatch "/": drop the prefix, keep a "/"
			ra.RegexRewrite = &matcherv3.RegexMatchAndSubstitute{
				Pattern:      &matcherv3.RegexMatcher{Regex: "^" + regexp.QuoteMeta(match.GetPathSeparatedPrefix()) + `(/?)(.*)`},
				Substitution: `/\2`}
		case rw.Uri != "":
			ra.PrefixRewrite = rw.Uri
		}
		if rw.Authority != "" {
			ra.HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: rw.Authority}
		}
	}
	if rr := hr.GetRewrite().GetUriRegexRewrite(); rr != nil {
		ra.RegexRewrite = &matcherv3.RegexMatchAndSubstitute{Pattern: &matcherv3.RegexMatcher{Regex: rr.Match}, Substitution: rr.Rewrite}
	}
	for _, m := range mirrors(hr, port, o) {
		ra.RequestMirrorPolicies = append(ra.RequestMirrorPolicies, m)
	}
	return ra
}

func mirrors(hr *networking.HTTPRoute, port int, o Options) []*routev3.RouteAction_RequestMirrorPolicy {
	var out []*routev3.RouteAction_RequestMirrorPolicy
	add := func(d *networking.Destination, p *networking.Percent) {
		m := &routev3.RouteAction_RequestMirrorPolicy{Cluster: destinationCluster(d, port, o)}
		v := 100.0
		if p != nil {
			v = p.Value
		}
		m.RuntimeFraction = &core.RuntimeFractionalPercent{DefaultValue: fraction(v)}
		out = append(out, m)
	}
	if hr.Mirror != nil {
		add(hr.Mirror, hr.MirrorPercentage)
	}
	for _, m := range hr.Mirrors {
		add(m.Destination, m.Percentage)
	}
	return out
}

// fraction turns a percentage into parts per million, as Istio does.
func fraction(v float64) *typev3.FractionalPercent {
	return &typev3.FractionalPercent{Numerator: uint32(v * 10000), Denominator: typev3.FractionalPercent_MILLION}
}

func fault(f *networking.HTTPFaultInjection) *faultv3.HTTPFault {
	if f == nil {
		return nil
	}
	out := &faultv3.HTTPFault{}
	if d := f.Delay; d != nil {
		v := 100.0
		if d.Percentage != nil {
			v = d.Percentage.Value
		} else if d.Percent != 0 { //nolint:staticcheck // deprecated field still honoured
			v = float64(d.Percent) //nolint:staticcheck
		}
		out.Delay = &faultcommon.FaultDelay{Percentage: fraction(v)}
		if fd := d.GetFixedDelay(); fd != nil {
			out.Delay.FaultDelaySecifier = &faultcommon.FaultDelay_FixedDelay{FixedDelay: fd}
		}
	}
	if a := f.Abort; a != nil {
		v := 100.0
		if a.Percentage != nil {
			v = a.Percentage.Value
		}
		out.Abort = &faultv3.FaultAbort{Percentage: fraction(v)}
		switch x := a.ErrorType.(type) {
		case *networking.HTTPFaultInjection_Abort_HttpStatus:
			out.Abort.ErrorType = &faultv3.FaultAbort_HttpStatus{HttpStatus: uint32(x.HttpStatus)}
		case *networking.HTTPFaultInjection_Abort_GrpcStatus:
			out.Abort.ErrorType = &faultv3.FaultAbort_GrpcStatus{GrpcStatus: grpcCode(x.GrpcStatus)}
		}
	}
	return out
}

var grpcCodes = map[string]uint32{"OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4,
	"NOT_FOUND": 5, "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8, "FAILED_PRECONDITION": 9,
	"ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12, "INTERNAL": 13, "UNAVAILABLE": 14, "DATA_LOSS": 15, "UNAUTHENTICATED": 16}

func grpcCode(s string) uint32 {
	if c, ok := grpcCodes[strings.ToUpper(s)]; ok {
		return c
	}
	n, _ := strconv.Atoi(s)
	return uint32(n)
}

// redirect translates a redirect as Istio's ApplyRedirect
// (pilot/pkg/networking/core/route/route.go) does: the path replaced
// (an empty one too) unless the prefix is; a port taken from the route's
// own port for derivePort FROM_REQUEST_PORT (the routes are built per
// listening port), left out when it is the scheme's default (80 for http,
// 443 for https; without a scheme, that of the listener: https when it
// terminates TLS). ok is false for a redirect code Envoy has no value for.
func redirect(r *networking.HTTPRedirect, port int, isTLS bool) (*routev3.RedirectAction, bool) {
	ra := &routev3.RedirectAction{HostRedirect: r.Authority}
	if r.PrefixRewrite != "" {
		ra.PathRewriteSpecifier = &routev3.RedirectAction_PrefixRewrite{PrefixRewrite: r.PrefixRewrite}
	} else {
		ra.PathRewriteSpecifier = &routev3.RedirectAction_PathRedirect{PathRedirect: r.Uri}
	}
	if r.Scheme != "" {
		ra.SchemeRewriteSpecifier = &routev3.RedirectAction_SchemeRedirect{SchemeRedirect: r.Scheme}
	}
	if r.RedirectPort != nil {
		switch p := r.RedirectPort.(type) {
		case *networking.HTTPRedirect_DerivePort:
			if p.DerivePort == networking.HTTPRedirect_FROM_REQUEST_PORT {
				ra.PortRedirect = uint32(port)
			}
		case *networking.HTTPRedirect_Port:
			ra.PortRedirect = p.Port
		}
		scheme := r.Scheme
		if scheme == "" {
			scheme = "http"
			if isTLS {
				scheme = "https"
			}
		}
		if (ra.PortRedirect == 80 && scheme == "http") || (ra.PortRedirect == 443 && scheme == "https") {
			ra.PortRedirect = 0
		}
	}
	switch r.RedirectCode {
	case 0, 301:
		ra.ResponseCode = routev3.RedirectAction_MOVED_PERMANENTLY
	case 302:
		ra.ResponseCode = routev3.RedirectAction_FOUND
	case 303:
		ra.ResponseCode = routev3.RedirectAction_SEE_OTHER
	case 307:
		ra.ResponseCode = routev3.RedirectAction_TEMPORARY_REDIRECT
	case 308:
		ra.ResponseCode = routev3.RedirectAction_PERMANENT_REDIRECT
	default:
		return nil, false
	}
	return ra, true
}

func applyHeaders(r *routev3.Route, h *networking.Headers) {
	if h == nil {
		return
	}
	add := func(m map[string]string, append_ bool) []*core.HeaderValueOption {
		var out []*core.HeaderValueOption
		action := core.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
		if append_ {
			action = core.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
		}
		for _, k := range sortedKeys(m) {
			out = append(out, &core.HeaderValueOption{Header: &core.HeaderValue{Key: k, Value: m[k]}, AppendAction: action})
		}
		return out
	}
	if req := h.Request; req != nil {
		r.RequestHeadersToAdd = append(add(req.Set, false), add(req.Add, true)...)
		r.RequestHeadersToRemove = req.Remove
	}
	if resp := h.Response; resp != nil {
		r.ResponseHeadersToAdd = append(add(resp.Set, false), add(resp.Add, true)...)
		r.ResponseHeadersToRemove = resp.Remove
	}
}
