package gateway

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	istio "istio.io/api/networking/v1alpha3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// httpRules converts the rules of an HTTPRoute, one Istio route per match.
// A nil route with an error is a hard error of the whole route; other
// errors are reported while the routes serve.
func (rc routeCtx) httpRules(namespace, name string, rules []gatewayv1.HTTPRouteRule) ([]*istio.HTTPRoute, *ConfigError) {
	return perMatch(rules, func(r *gatewayv1.HTTPRouteRule) *[]gatewayv1.HTTPRouteMatch { return &r.Matches },
		func(r gatewayv1.HTTPRouteRule, pos int) (*istio.HTTPRoute, *ConfigError) {
			return rc.httpRule(r, namespace, name, pos)
		})
}

// perMatch splits each rule of an HTTPRoute or GRPCRoute into one rule per
// match (a rule without matches stays whole) and converts each, keeping the
// position of the rule it came from for its name. A nil route with an error
// ends the conversion; other errors are kept (the last one) while the
// routes serve.
func perMatch[R, M any](rules []R, matches func(*R) *[]M, convert func(R, int) (*istio.HTTPRoute, *ConfigError)) ([]*istio.HTTPRoute, *ConfigError) {
	var out []*istio.HTTPRoute
	var routeErr *ConfigError
	for n, r := range rules {
		all := *matches(&r)
		split := all
		if len(split) == 0 {
			split = make([]M, 1)
		}
		for i := range split {
			rule := r
			if len(all) > 0 {
				*matches(&rule) = []M{split[i]}
			}
			vs, err := convert(rule, n)
			if vs == nil {
				return nil, err
			}
			if err != nil {
				routeErr = err
			}
			out = append(out, vs)
		}
	}
	return out, routeErr
}

func ruleName(name *gatewayv1.SectionName, namespace, route string, pos int) string {
	if name != nil {
		return string(*name)
	}
	return namespace + "." + route + "." + strconv.Itoa(pos)
}

func (rc routeCtx) httpRule(r gatewayv1.HTTPRouteRule, namespace, name string, pos int) (*istio.HTTPRoute, *ConfigError) {
	vs := &istio.HTTPRoute{Name: ruleName(r.Name, namespace, name, pos)}
	for _, m := range r.Matches {
		match, err := httpMatch(m)
		if err != nil {
			return nil, err
		}
		vs.Match = append(vs.Match, match)
	}
	var mirrorErr *ConfigError
	for _, f := range r.Filters {
		switch f.Type {
		case gatewayv1.HTTPRouteFilterRequestHeaderModifier, gatewayv1.HTTPRouteFilterResponseHeaderModifier:
			if err := setHeaders(&vs.Headers, f.Type == gatewayv1.HTTPRouteFilterRequestHeaderModifier,
				f.RequestHeaderModifier, f.ResponseHeaderModifier); err != nil {
				return nil, err
			}
		case gatewayv1.HTTPRouteFilterRequestRedirect:
			vs.Redirect = redirect(f.RequestRedirect)
		case gatewayv1.HTTPRouteFilterRequestMirror:
			m, err := rc.mirror(f.RequestMirror)
			if err != nil {
				mirrorErr = err
			} else if m != nil {
				vs.Mirrors = append(vs.Mirrors, m)
			}
		case gatewayv1.HTTPRouteFilterURLRewrite:
			vs.Rewrite = rewrite(f.URLRewrite)
		case gatewayv1.HTTPRouteFilterCORS:
			vs.CorsPolicy = corsPolicy(f.CORS)
		default:
			return nil, &ConfigError{Reason: reasonInvalidFilter, Message: fmt.Sprintf("unsupported filter type %q", f.Type)}
		}
	}
	setRetries(vs, r.Retry)
	setTimeouts(vs, r.Timeouts)
	if weightSum(r.BackendRefs, httpWeight) == 0 && vs.Redirect == nil {
		// no backend with a weight: the spec asks for a 500
		vs.DirectResponse = &istio.HTTPDirectResponse{Status: 500}
		return vs, mirrorErr
	}
	route, backendErr, err := rc.httpDestinations(r.BackendRefs)
	if err != nil {
		return nil, err
	}
	vs.Route = route
	return vs, joinErrors(backendErr, mirrorErr)
}

func httpWeight(b gatewayv1.HTTPBackendRef) *int32 { return b.Weight }

// setHeaders applies a request or response header modifier.
func setHeaders(h **istio.Headers, request bool, req, resp *gatewayv1.HTTPHeaderFilter) *ConfigError {
	f := resp
	if request {
		f = req
	}
	ops, err := headerOperations(f)
	if err != nil || ops == nil {
		return err
	}
	if *h == nil {
		*h = &istio.Headers{}
	}
	if request {
		(*h).Request = ops
	} else {
		(*h).Response = ops
	}
	return nil
}

func validHeaderValue(v string) bool {
	for _, c := range []byte(v) {
		if c != 0x09 && (c < 0x20 || c == 0x7F) {
			return false
		}
	}
	return true
}

func headerOperations(f *gatewayv1.HTTPHeaderFilter) (*istio.Headers_HeaderOperations, *ConfigError) {
	if f == nil {
		return nil, nil
	}
	for _, h := range append(append([]gatewayv1.HTTPHeader{}, f.Set...), f.Add...) {
		if !validHeaderValue(h.Value) {
			return nil, &ConfigError{Reason: reasonInvalidFilter, Message: fmt.Sprintf("header %q value contains invalid characters", h.Name)}
		}
	}
	return &istio.Headers_HeaderOperations{Add: headerMap(f.Add), Remove: f.Remove, Set: headerMap(f.Set)}, nil
}

// headerMap lower-cases names; later duplicates are ignored, per the spec.
func headerMap(hs []gatewayv1.HTTPHeader) map[string]string {
	if len(hs) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, h := range hs {
		k := strings.ToLower(string(h.Name))
		if _, dup := out[k]; !dup {
			out[k] = h.Value
		}
	}
	return out
}

func setRetries(vs *istio.HTTPRoute, r *gatewayv1.HTTPRouteRetry) {
	if r == nil {
		return
	}
	// connection errors are retried whenever a retry stanza is present
	on := []string{"connect-failure", "refused-stream", "unavailable", "cancelled"}
	for _, c := range r.Codes {
		on = append(on, strconv.Itoa(int(c)))
	}
	vs.Retries = &istio.HTTPRetry{Attempts: int32(orDefault(r.Attempts, 2)), RetryOn: strings.Join(on, ",")}
	if vs.Retries.Attempts == 0 {
		vs.Retries.RetryOn = ""
	}
	if r.Backoff != nil {
		d, _ := time.ParseDuration(string(*r.Backoff))
		vs.Retries.Backoff = durationpb.New(d)
	}
}

func setTimeouts(vs *istio.HTTPRoute, t *gatewayv1.HTTPRouteTimeouts) {
	if t == nil {
		return
	}
	if t.Request != nil {
		if d, _ := time.ParseDuration(string(*t.Request)); d != 0 {
			vs.Timeout = durationpb.New(d)
		}
	}
	if t.BackendRequest != nil {
		if d, _ := time.ParseDuration(string(*t.BackendRequest)); d != 0 {
			if vs.Retries != nil {
				vs.Retries.PerTryTimeout = durationpb.New(d)
			} else {
				vs.Timeout = durationpb.New(d)
			}
		}
	}
}

func (rc routeCtx) httpDestinations(refs []gatewayv1.HTTPBackendRef) ([]*istio.HTTPRouteDestination, *ConfigError, *ConfigError) {
	if refs == nil {
		return nil, nil, nil
	}
	kept, weights := weighted(refs, httpWeight)
	var backendErr *ConfigError
	out := []*istio.HTTPRouteDestination{}
	for i, b := range kept {
		dst, err := rc.destination(b.BackendObjectReference)
		if err != nil {
			if !invalidBackend(err) {
				return nil, nil, err
			}
			backendErr = err
		}
		rd := &istio.HTTPRouteDestination{Destination: dst, Weight: weights[i]}
		for _, f := range b.Filters {
			switch f.Type {
			case gatewayv1.HTTPRouteFilterRequestHeaderModifier, gatewayv1.HTTPRouteFilterResponseHeaderModifier:
				if err := setHeaders(&rd.Headers, f.Type == gatewayv1.HTTPRouteFilterRequestHeaderModifier,
					f.RequestHeaderModifier, f.ResponseHeaderModifier); err != nil {
					return nil, nil, err
				}
			default:
				return nil, nil, &ConfigError{Reason: reasonInvalidFilter, Message: fmt.Sprintf("unsupported filter type %q", f.Type)}
			}
		}
		out = append(out, rd)
	}
	return out, backendErr, nil
}

func (rc routeCtx) mirror(f *gatewayv1.HTTPRequestMirrorFilter) (*istio.HTTPMirrorPolicy, *ConfigError) {
	if f == nil {
		return nil, nil
	}
	dst, err := rc.destination(f.BackendRef)
	if err != nil {
		return nil, err
	}
	var pct *istio.Percent
	switch {
	case f.Fraction != nil:
		pct = &istio.Percent{Value: 100 * float64(f.Fraction.Numerator) / float64(orDefault(f.Fraction.Denominator, 100))}
	case f.Percent != nil:
		pct = &istio.Percent{Value: float64(*f.Percent)}
	}
	return &istio.HTTPMirrorPolicy{Destination: dst, Percentage: pct}, nil
}

func rewrite(f *gatewayv1.HTTPURLRewriteFilter) *istio.HTTPRewrite {
	if f == nil {
		return nil
	}
	out := &istio.HTTPRewrite{}
	if f.Path != nil {
		switch f.Path.Type {
		case gatewayv1.PrefixMatchHTTPPathModifier:
			out.Uri = strings.TrimSuffix(orDefault(f.Path.ReplacePrefixMatch, ""), "/")
			if out.Uri == "" {
				// "/" removes the prefix
				out.Uri = "/"
			}
		case gatewayv1.FullPathHTTPPathModifier:
			out.UriRegexRewrite = &istio.RegexRewrite{Match: "/.*", Rewrite: orDefault(f.Path.ReplaceFullPath, "")}
		}
	}
	if f.Hostname != nil {
		out.Authority = string(*f.Hostname)
	}
	if out.Uri == "" && out.UriRegexRewrite == nil && out.Authority == "" {
		return nil
	}
	return out
}

func redirect(f *gatewayv1.HTTPRequestRedirectFilter) *istio.HTTPRedirect {
	if f == nil {
		return nil
	}
	out := &istio.HTTPRedirect{}
	if f.StatusCode != nil {
		out.RedirectCode = uint32(*f.StatusCode)
	}
	if f.Hostname != nil {
		out.Authority = string(*f.Hostname)
	}
	if f.Scheme != nil {
		out.Scheme = *f.Scheme
	}
	switch {
	case f.Port != nil:
		out.RedirectPort = &istio.HTTPRedirect_Port{Port: uint32(*f.Port)}
	case f.Scheme != nil:
		// without a port, the scheme's default port
		out.RedirectPort = &istio.HTTPRedirect_DerivePort{DerivePort: istio.HTTPRedirect_FROM_PROTOCOL_DEFAULT}
	default:
		// without either, the request's port (unlike Istio's default)
		out.RedirectPort = &istio.HTTPRedirect_DerivePort{DerivePort: istio.HTTPRedirect_FROM_REQUEST_PORT}
	}
	if f.Path != nil {
		switch f.Path.Type {
		case gatewayv1.FullPathHTTPPathModifier:
			out.Uri = orDefault(f.Path.ReplaceFullPath, "")
		case gatewayv1.PrefixMatchHTTPPathModifier:
			out.PrefixRewrite = orDefault(f.Path.ReplacePrefixMatch, "")
		}
	}
	return out
}
