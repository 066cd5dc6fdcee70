package gateway

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	istio "istio.io/api/networking/v1alpha3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func exact(s string) *istio.StringMatch {
	return &istio.StringMatch{MatchType: &istio.StringMatch_Exact{Exact: s}}
}

func prefix(s string) *istio.StringMatch {
	return &istio.StringMatch{MatchType: &istio.StringMatch_Prefix{Prefix: s}}
}

func regex(s string) *istio.StringMatch {
	return &istio.StringMatch{MatchType: &istio.StringMatch_Regex{Regex: s}}
}

// httpMatch converts one HTTPRoute match.
func httpMatch(m gatewayv1.HTTPRouteMatch) (*istio.HTTPMatchRequest, *ConfigError) {
	uri, err := uriMatch(m.Path)
	if err != nil {
		return nil, err
	}
	out := &istio.HTTPMatchRequest{Uri: uri}
	for _, h := range m.Headers {
		sm, err := stringMatch(string(orDefault(h.Type, gatewayv1.HeaderMatchExact)), h.Value, "HeaderMatch")
		if err != nil {
			return nil, err
		}
		if out.Headers == nil {
			out.Headers = map[string]*istio.StringMatch{}
		}
		out.Headers[string(h.Name)] = sm
	}
	for _, q := range m.QueryParams {
		sm, err := stringMatch(string(orDefault(q.Type, gatewayv1.QueryParamMatchExact)), q.Value, "QueryParams")
		if err != nil {
			return nil, err
		}
		if out.QueryParams == nil {
			out.QueryParams = map[string]*istio.StringMatch{}
		}
		out.QueryParams[string(q.Name)] = sm
	}
	if m.Method != nil {
		out.Method = exact(string(*m.Method))
	}
	return out, nil
}

// stringMatch converts an Exact or RegularExpression match.
func stringMatch(tp, value, what string) (*istio.StringMatch, *ConfigError) {
	switch tp {
	case string(gatewayv1.HeaderMatchExact):
		return exact(value), nil
	case string(gatewayv1.HeaderMatchRegularExpression):
		return regex(value), nil
	}
	return nil, &ConfigError{Reason: reasonInvalidConfig, Message: fmt.Sprintf("unknown type: %q is not supported %s type", tp, what)}
}

// uriMatch converts a path match; a route without one matches the prefix /.
func uriMatch(p *gatewayv1.HTTPPathMatch) (*istio.StringMatch, *ConfigError) {
	tp, value := gatewayv1.PathMatchPathPrefix, "/"
	if p != nil {
		tp = orDefault(p.Type, gatewayv1.PathMatchPathPrefix)
		value = orDefault(p.Value, "/")
	}
	switch tp {
	case gatewayv1.PathMatchPathPrefix:
		// a trailing / is ignored
		if value != "/" {
			value = strings.TrimSuffix(value, "/")
		}
		return prefix(value), nil
	case gatewayv1.PathMatchExact:
		return exact(value), nil
	case gatewayv1.PathMatchRegularExpression:
		return regex(value), nil
	}
	return nil, &ConfigError{Reason: reasonInvalidConfig, Message: fmt.Sprintf("unknown type: %q is not supported Path match type", tp)}
}

// grpcMatch converts one GRPCRoute match: the method becomes a path match
// on /<service>/<method>.
func grpcMatch(m gatewayv1.GRPCRouteMatch) (*istio.HTTPMatchRequest, *ConfigError) {
	uri, err := grpcURIMatch(m.Method)
	if err != nil {
		return nil, err
	}
	out := &istio.HTTPMatchRequest{Uri: uri}
	for _, h := range m.Headers {
		sm, err := stringMatch(string(orDefault(h.Type, gatewayv1.GRPCHeaderMatchExact)), h.Value, "HeaderMatch")
		if err != nil {
			return nil, err
		}
		if out.Headers == nil {
			out.Headers = map[string]*istio.StringMatch{}
		}
		out.Headers[string(h.Name)] = sm
	}
	return out, nil
}

func grpcURIMatch(m *gatewayv1.GRPCMethodMatch) (*istio.StringMatch, *ConfigError) {
	if m == nil {
		return nil, nil
	}
	if m.Method == nil && m.Service == nil {
		return nil, &ConfigError{Reason: reasonInvalidConfig, Message: "gRPC match must have method or service defined"}
	}
	switch tp := orDefault(m.Type, gatewayv1.GRPCMethodMatchExact); tp {
	case gatewayv1.GRPCMethodMatchExact:
		switch {
		case m.Method == nil:
			return prefix("/" + *m.Service + "/"), nil
		case m.Service == nil:
			return regex("/[^/]+/" + *m.Method), nil
		}
		return exact("/" + *m.Service + "/" + *m.Method), nil
	case gatewayv1.GRPCMethodMatchRegularExpression:
		switch {
		case m.Method == nil:
			return regex("/" + *m.Service + "/.+"), nil
		case m.Service == nil:
			return regex("/[^/]+/" + *m.Method), nil
		}
		return regex("/" + *m.Service + "/" + *m.Method), nil
	default:
		return nil, &ConfigError{Reason: reasonInvalidConfig, Message: fmt.Sprintf("unknown type: %q is not supported Path match type", tp)}
	}
}

// originRegex matches a well-formed origin: scheme://host[:port].
const originRegex = `^[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s?#]+$`

// corsPolicy converts a CORS filter; origins with wildcards become prefix
// or regular-expression matches.
func corsPolicy(f *gatewayv1.HTTPCORSFilter) *istio.CorsPolicy {
	if f == nil {
		return nil
	}
	out := &istio.CorsPolicy{UnmatchedPreflights: istio.CorsPolicy_IGNORE}
	for _, o := range f.AllowOrigins {
		s := string(o)
		switch {
		case s == "":
		case s == "*":
			out.AllowOrigins = append(out.AllowOrigins, regex(originRegex))
		case !strings.Contains(s, "*"):
			out.AllowOrigins = append(out.AllowOrigins, exact(s))
		case strings.Count(s, "*") == 1 && strings.HasSuffix(s, "*"):
			out.AllowOrigins = append(out.AllowOrigins, prefix(strings.TrimSuffix(s, "*")))
		default:
			p := strings.ReplaceAll(regexp.QuoteMeta(s), `\*`, ".*")
			if _, err := regexp.Compile(p); err == nil {
				out.AllowOrigins = append(out.AllowOrigins, regex("^"+p+"$"))
			}
		}
	}
	if orDefault(f.AllowCredentials, false) {
		out.AllowCredentials = wrapperspb.Bool(true)
	}
	for _, m := range f.AllowMethods {
		out.AllowMethods = append(out.AllowMethods, string(m))
	}
	for _, h := range f.AllowHeaders {
		out.AllowHeaders = append(out.AllowHeaders, string(h))
	}
	for _, h := range f.ExposeHeaders {
		out.ExposeHeaders = append(out.ExposeHeaders, string(h))
	}
	if f.MaxAge > 0 {
		out.MaxAge = durationpb.New(time.Duration(f.MaxAge) * time.Second)
	}
	return out
}
