package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/validation"
)

// netCase is one table case for the networking kinds. errs and warns list
// substrings ("path: message") that must all appear in the returned error or
// warning; an empty list means none may be returned. anyWarn skips the
// warning check.
type netCase struct {
	name    string
	spec    any
	errs    []string
	warns   []string
	anyWarn bool
}

func netCfg(spec any) config.Config {
	return config.Config{Meta: config.Meta{Name: "test", Namespace: "default"}, Spec: spec}
}

func netRun(t *testing.T, fn validation.ValidateFunc, cases []netCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			warn, err := fn(netCfg(tc.spec))
			netExpect(t, "error", err, tc.errs)
			if !tc.anyWarn {
				netExpect(t, "warning", warn, tc.warns)
			}
		})
	}
}

func netExpect(t *testing.T, kind string, got error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if got != nil {
			t.Errorf("unexpected %s:\n%v", kind, got)
		}
		return
	}
	if got == nil {
		t.Errorf("expected %s containing %q, got none", kind, want)
		return
	}
	for _, w := range want {
		if !strings.Contains(got.Error(), w) {
			t.Errorf("%s does not contain %q:\n%v", kind, w, got)
		}
	}
}

func dest(host string) *networking.HTTPRouteDestination {
	return &networking.HTTPRouteDestination{Destination: &networking.Destination{Host: host}}
}

func vsRoute(routes ...*networking.HTTPRouteDestination) *networking.HTTPRoute {
	return &networking.HTTPRoute{Route: routes}
}

func vsHTTP(h ...*networking.HTTPRoute) *networking.VirtualService {
	return &networking.VirtualService{Hosts: []string{"reviews"}, Http: h}
}

func regexMatch(re string) *networking.StringMatch {
	return &networking.StringMatch{MatchType: &networking.StringMatch_Regex{Regex: re}}
}

func prefixMatch(p string) *networking.StringMatch {
	return &networking.StringMatch{MatchType: &networking.StringMatch_Prefix{Prefix: p}}
}

func TestValidateVirtualServiceValid(t *testing.T) {
	netRun(t, validation.ValidateVirtualService, []netCase{
		{name: "simple route", spec: vsHTTP(vsRoute(&networking.HTTPRouteDestination{
			Destination: &networking.Destination{Host: "reviews.default.svc.cluster.local", Subset: "v1",
				Port: &networking.PortSelector{Number: 9080}},
		}))},
		{name: "relative weights need not sum to 100", spec: vsHTTP(vsRoute(
			&networking.HTTPRouteDestination{Destination: &networking.Destination{Host: "a"}, Weight: 30},
			&networking.HTTPRouteDestination{Destination: &networking.Destination{Host: "b"}, Weight: 30},
		))},
		{name: "wildcard host on gateway", spec: &networking.VirtualService{
			Hosts: []string{"*"}, Gateways: []string{"istio-system/ingress"},
			Http: []*networking.HTTPRoute{vsRoute(dest("reviews"))},
		}},
		{name: "matches and policies", spec: vsHTTP(&networking.HTTPRoute{
			Match: []*networking.HTTPMatchRequest{{
				Uri:         prefixMatch(""),
				Headers:     map[string]*networking.StringMatch{"x-user": regexMatch("^j.*"), "x-present": {}},
				QueryParams: map[string]*networking.StringMatch{"v": regexMatch(`\d+`)},
			}},
			Route:   []*networking.HTTPRouteDestination{dest("reviews")},
			Timeout: durationpb.New(2e9),
			Retries: &networking.HTTPRetry{Attempts: 3, PerTryTimeout: durationpb.New(1e9), RetryOn: "5xx,503,reset"},
			Fault: &networking.HTTPFaultInjection{Abort: &networking.HTTPFaultInjection_Abort{
				Percentage: &networking.Percent{Value: 10},
				ErrorType:  &networking.HTTPFaultInjection_Abort_HttpStatus{HttpStatus: 503},
			}},
			CorsPolicy: &networking.CorsPolicy{AllowOrigins: []*networking.StringMatch{prefixMatch("https://")},
				AllowMethods: []string{"GET", "POST"}, AllowHeaders: []string{"*", "x-foo"}},
			Rewrite: &networking.HTTPRewrite{UriRegexRewrite: &networking.RegexRewrite{Match: "^/a/(.*)", Rewrite: `/\1`}},
		})},
		{name: "redirect", spec: vsHTTP(&networking.HTTPRoute{Redirect: &networking.HTTPRedirect{Uri: "/new", RedirectCode: 301}})},
		{name: "direct response", spec: vsHTTP(&networking.HTTPRoute{DirectResponse: &networking.HTTPDirectResponse{Status: 404}})},
		{name: "delegate VS", spec: &networking.VirtualService{Http: []*networking.HTTPRoute{vsRoute(dest("reviews"))}}},
		{name: "root route delegates", spec: vsHTTP(&networking.HTTPRoute{
			Delegate: &networking.Delegate{Name: "reviews-delegate", Namespace: "team"},
		})},
		{name: "tls route", spec: &networking.VirtualService{
			Hosts: []string{"*.example.com"},
			Tls: []*networking.TLSRoute{{
				Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"api.example.com"}, Port: 443}},
				Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: "api.example.com"}}},
			}},
		}},
		{name: "tcp route without match", spec: &networking.VirtualService{
			Hosts: []string{"db"},
			Tcp:   []*networking.TCPRoute{{Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: "db"}}}}},
		}},
	})
}

func TestValidateVirtualServiceRoutes(t *testing.T) {
	netRun(t, validation.ValidateVirtualService, []netCase{
		{name: "route is required", spec: vsHTTP(&networking.HTTPRoute{Name: "r"}),
			errs: []string{"spec.http[0]: HTTP route, redirect or direct_response is required"}},
		{name: "route and redirect", spec: vsHTTP(&networking.HTTPRoute{
			Route: []*networking.HTTPRouteDestination{dest("a")}, Redirect: &networking.HTTPRedirect{Uri: "/x"},
		}), errs: []string{"spec.http[0]: HTTP route cannot contain both route and redirect"}},
		{name: "direct response and rewrite", spec: vsHTTP(&networking.HTTPRoute{
			DirectResponse: &networking.HTTPDirectResponse{Status: 200}, Rewrite: &networking.HTTPRewrite{Uri: "/"},
		}), errs: []string{"spec.http[0]: HTTP route rule cannot contain both rewrite and direct_response"}},
		{name: "no routes at all", spec: &networking.VirtualService{Hosts: []string{"a"}},
			errs: []string{"spec: http, tcp or tls must be provided in virtual service"}},
		{name: "null http route", spec: vsHTTP(nil), errs: []string{"spec.http[0]: http route may not be null"}},
		{name: "null destination", spec: vsHTTP(vsRoute(&networking.HTTPRouteDestination{})),
			errs: []string{"spec.http[0].route[0].destination: destination is required"}},
		{name: "empty destination host", spec: vsHTTP(vsRoute(dest(""))),
			errs: []string{"spec.http[0].route[0].destination.host: empty domain name not allowed (destination host is required)"}},
		{name: "bad destination port and subset", spec: vsHTTP(vsRoute(&networking.HTTPRouteDestination{
			Destination: &networking.Destination{Host: "a", Subset: "v_1", Port: &networking.PortSelector{Number: 70000}},
		})), errs: []string{
			"spec.http[0].route[0].destination.subset: subset name is invalid: v_1 (must be a DNS-1123 label)",
			"spec.http[0].route[0].destination.port.number: port number 70000 must be in the range 1..65535",
		}},
		{name: "negative weight", spec: vsHTTP(vsRoute(&networking.HTTPRouteDestination{
			Destination: &networking.Destination{Host: "a"}, Weight: -5,
		})), errs: []string{"spec.http[0].route[0].weight: weight -5 < 0"}},
		{name: "all weights zero", spec: vsHTTP(vsRoute(dest("a"), dest("b"))),
			errs: []string{"spec.http[0].route: total destination weight = 0"}},
		{name: "timeout too small", spec: vsHTTP(&networking.HTTPRoute{
			Route: []*networking.HTTPRouteDestination{dest("a")}, Timeout: durationpb.New(100),
		}), errs: []string{"spec.http[0].timeout: duration must be greater than 1ms"}},
		{name: "retries", spec: vsHTTP(&networking.HTTPRoute{
			Route:   []*networking.HTTPRouteDestination{dest("a")},
			Retries: &networking.HTTPRetry{Attempts: -1, RetryOn: "5xx,bogus", PerTryTimeout: durationpb.New(1500000)},
		}), errs: []string{
			"spec.http[0].retries.attempts: attempts cannot be negative",
			`spec.http[0].retries.retryOn: "bogus" is not a valid retryOn policy`,
			"spec.http[0].retries.perTryTimeout: only durations to ms precision are supported",
		}},
		{name: "fault", spec: vsHTTP(&networking.HTTPRoute{
			Route: []*networking.HTTPRouteDestination{dest("a")},
			Fault: &networking.HTTPFaultInjection{Abort: &networking.HTTPFaultInjection_Abort{
				Percentage: &networking.Percent{Value: 150},
				ErrorType:  &networking.HTTPFaultInjection_Abort_HttpStatus{HttpStatus: 700},
			}},
		}), errs: []string{
			"spec.http[0].fault.abort.percentage: percentage 150 is neither 0.0, nor in range [0.0001, 100.0]",
			"spec.http[0].fault.abort.httpStatus: HTTP status 700 is not in range 200-599",
		}},
		{name: "empty fault", spec: vsHTTP(&networking.HTTPRoute{
			Route: []*networking.HTTPRouteDestination{dest("a")}, Fault: &networking.HTTPFaultInjection{},
		}), errs: []string{"spec.http[0].fault: HTTP fault injection must have an abort and/or a delay"}},
		{name: "mirror percentage", spec: vsHTTP(&networking.HTTPRoute{
			Route: []*networking.HTTPRouteDestination{dest("a")}, Mirror: &networking.Destination{Host: "b"},
			MirrorPercentage: &networking.Percent{Value: 120},
		}), errs: []string{"spec.http[0].mirrorPercentage: mirror_percentage must have a max value of 100 (it has 120.000000)"}},
		{name: "cors and rewrite", spec: vsHTTP(&networking.HTTPRoute{
			Route:      []*networking.HTTPRouteDestination{dest("a")},
			CorsPolicy: &networking.CorsPolicy{AllowMethods: []string{"FETCH"}},
			Rewrite:    &networking.HTTPRewrite{Uri: "/a", UriRegexRewrite: &networking.RegexRewrite{Match: "(", Rewrite: "/"}},
		}), errs: []string{
			`spec.http[0].corsPolicy.allowMethods[0]: "FETCH" is not a supported HTTP method`,
			"spec.http[0].rewrite: rewrite may only contain one of URI or UriRegexRewrite",
			"spec.http[0].rewrite.uriRegexRewrite.match: UriRegexRewrite has errors: \"HTTPRewrite.UriRegexRewrite.Match\": error parsing regexp: missing closing ): `(`; Istio uses RE2 style regex-based match (https://github.com/google/re2/wiki/Syntax)",
		}},
		{name: "redirect code", spec: vsHTTP(&networking.HTTPRoute{Redirect: &networking.HTTPRedirect{Uri: "/", RedirectCode: 200}}),
			errs: []string{"spec.http[0].redirect.redirectCode: 200 is not a valid redirect code, must be 3xx"}},
		{name: "pseudo header set", spec: vsHTTP(&networking.HTTPRoute{
			Route:   []*networking.HTTPRouteDestination{dest("a")},
			Headers: &networking.Headers{Response: &networking.Headers_HeaderOperations{Set: map[string]string{":status": "1"}}},
		}), errs: []string{`spec.http[0].headers.response.set[:status]: invalid header ":status"`}},
	})
}

func TestValidateVirtualServiceMatches(t *testing.T) {
	match := func(m *networking.HTTPMatchRequest) *networking.VirtualService {
		return vsHTTP(&networking.HTTPRoute{Match: []*networking.HTTPMatchRequest{m}, Route: []*networking.HTTPRouteDestination{dest("a")}})
	}
	netRun(t, validation.ValidateVirtualService, []netCase{
		{name: "uri regex must compile", spec: match(&networking.HTTPMatchRequest{Uri: regexMatch("(")}),
			errs: []string{"spec.http[0].match[0].uri.regex: \"uri\": error parsing regexp: missing closing ): `(`; Istio uses RE2 style regex-based match (https://github.com/google/re2/wiki/Syntax)"}},
		{name: "header regex must compile", spec: match(&networking.HTTPMatchRequest{
			Headers: map[string]*networking.StringMatch{"x-foo": regexMatch("[a-")},
		}), errs: []string{"spec.http[0].match[0].headers[x-foo].regex: \"headers\": error parsing regexp: missing closing ]: `[a-`; Istio uses RE2 style regex-based match (https://github.com/google/re2/wiki/Syntax)"}},
		{name: "query param regex", spec: match(&networking.HTTPMatchRequest{
			QueryParams: map[string]*networking.StringMatch{"q": regexMatch("*x")},
		}), errs: []string{"spec.http[0].match[0].queryParams[q].regex: \"queryParams\": error parsing regexp: missing argument to repetition operator: `*`; Istio uses RE2 style regex-based match (https://github.com/google/re2/wiki/Syntax)"}},
		{name: "perl-only regex is rejected", spec: match(&networking.HTTPMatchRequest{Uri: regexMatch(`^/(?!admin)`)}),
			errs: []string{"spec.http[0].match[0].uri.regex: \"uri\": error parsing regexp: invalid or unsupported Perl syntax: `(?!`; Istio uses RE2 style regex-based match (https://github.com/google/re2/wiki/Syntax)"}},
		{name: "empty method prefix", spec: match(&networking.HTTPMatchRequest{Method: prefixMatch("")}),
			errs: []string{"spec.http[0].match[0].method.prefix: \"method\": prefix string match should not be empty"}},
		{name: "bad header name", spec: match(&networking.HTTPMatchRequest{
			Headers: map[string]*networking.StringMatch{"x foo": {}},
		}), errs: []string{`spec.http[0].match[0].headers[x foo]: header name x foo is not a valid header name`}},
		{name: "uppercase header name warns", spec: match(&networking.HTTPMatchRequest{
			Headers: map[string]*networking.StringMatch{"X-Foo": prefixMatch("a")},
		}), warns: []string{`spec.http[0].match[0].headers[X-Foo]: header name "X-Foo" should be lowercase`}},
		{name: "empty uri match warns", spec: match(&networking.HTTPMatchRequest{Uri: &networking.StringMatch{}}),
			warns: []string{"spec.http[0].match[0].uri: string match sets none of exact, prefix or regex"}},
		{name: "jwt claim routing needs a gateway", spec: match(&networking.HTTPMatchRequest{
			Headers: map[string]*networking.StringMatch{"@request.auth.claims.group": prefixMatch("a")},
		}), errs: []string{"spec.http[0].match[0].headers[@request.auth.claims.group]: JWT claim based routing"}},
		{name: "match port and source namespace", spec: match(&networking.HTTPMatchRequest{Port: 99999, SourceNamespace: "Bad_NS"}),
			errs: []string{
				"spec.http[0].match[0].port: port number 99999",
				`spec.http[0].match[0].sourceNamespace: sourceNamespace match Bad_NS is invalid`,
			}},
	})
}

func TestValidateVirtualServiceHostsAndDelegates(t *testing.T) {
	route := []*networking.HTTPRoute{vsRoute(dest("a"))}
	netRun(t, validation.ValidateVirtualService, []netCase{
		{name: "star host on mesh", spec: &networking.VirtualService{Hosts: []string{"*"}, Http: route},
			errs: []string{"spec.hosts[0]: wildcard host * is not allowed for virtual services bound to the mesh gateway"}},
		{name: "invalid host", spec: &networking.VirtualService{Hosts: []string{"foo_bar.com"}, Http: route},
			errs: []string{`spec.hosts[0]: invalid host "foo_bar.com"`}},
		{name: "ip host is allowed", spec: &networking.VirtualService{Hosts: []string{"10.0.0.1"}, Http: route}},
		{name: "overlapping hosts", spec: &networking.VirtualService{Hosts: []string{"*.foo.com", "bar.foo.com"}, Http: route},
			errs: []string{"spec.hosts[1]: duplicate hosts in virtual service: *.foo.com & bar.foo.com"}},
		{name: "bad gateway reference", spec: &networking.VirtualService{Hosts: []string{"a"}, Gateways: []string{"ns/Gw_1"}, Http: route},
			errs: []string{`spec.gateways[0]: gateway "ns/Gw_1": invalid value for gateway name: "Gw_1"`}},
		{name: "legacy gateway reference warns", spec: &networking.VirtualService{Hosts: []string{"a"}, Gateways: []string{"gw.istio-system"}, Http: route},
			warns: []string{`spec.gateways[0]: using legacy gatewayName format "gw.istio-system"; prefer the <namespace>/<name> format: "istio-system/gw"`}},
		{name: "delegate VS with gateways and tcp", spec: &networking.VirtualService{
			Gateways: []string{"gw"}, Http: route,
			Tcp: []*networking.TCPRoute{{Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: "a"}}}}},
		}, errs: []string{
			"spec.gateways: delegate virtual service must have no gateways specified",
			"spec.tcp: delegate virtual service must have no tcp route specified",
		}},
		{name: "delegate route cannot delegate", spec: &networking.VirtualService{Http: []*networking.HTTPRoute{{
			Route: []*networking.HTTPRouteDestination{dest("a")}, Delegate: &networking.Delegate{Name: "x"},
		}}}, errs: []string{"spec.http[0].delegate: delegate HTTP route cannot contain delegate"}},
		{name: "root route with route and no delegate name", spec: vsHTTP(&networking.HTTPRoute{
			Name: "root", Route: []*networking.HTTPRouteDestination{dest("a")}, Delegate: &networking.Delegate{},
		}), errs: []string{
			"spec.http[0].route: root HTTP route root must not specify route",
			"spec.http[0].delegate.name: delegate name is required",
		}},
		{name: "second catch-all rule is unreachable", spec: vsHTTP(vsRoute(dest("a")), vsRoute(dest("b"))),
			warns: []string{"spec.http[1]: virtualService rule #1 not used (only the last rule can have no matches)"}},
		{name: "exportTo", spec: &networking.VirtualService{Hosts: []string{"a"}, Http: route, ExportTo: []string{"*", "ns1"}},
			errs: []string{"spec.exportTo: cannot have both public (*) and non-public exportTo values for a resource"}},
	})
}

func TestValidateVirtualServiceL4(t *testing.T) {
	rd := []*networking.RouteDestination{{Destination: &networking.Destination{Host: "a"}}}
	netRun(t, validation.ValidateVirtualService, []netCase{
		{name: "tls route without match", spec: &networking.VirtualService{
			Hosts: []string{"a.com"}, Tls: []*networking.TLSRoute{{Route: rd}},
		}, errs: []string{"spec.tls[0].match: TLS route must have at least one match condition"}},
		{name: "tls route without sni hosts", spec: &networking.VirtualService{
			Hosts: []string{"a.com"}, Tls: []*networking.TLSRoute{{Match: []*networking.TLSMatchAttributes{{Port: 443}}, Route: rd}},
		}, errs: []string{"spec.tls[0].match[0].sniHosts: TLS match must have at least one SNI host"}},
		{name: "sni host outside of hosts", spec: &networking.VirtualService{
			Hosts: []string{"a.com"},
			Tls:   []*networking.TLSRoute{{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"b.com"}}}, Route: rd}},
		}, errs: []string{`spec.tls[0].match[0].sniHosts[0]: SNI host "b.com" is not a compatible subset of any of the virtual service hosts: [a.com]`}},
		{name: "tls route without destinations", spec: &networking.VirtualService{
			Hosts: []string{"a.com"},
			Tls:   []*networking.TLSRoute{{Match: []*networking.TLSMatchAttributes{{SniHosts: []string{"a.com"}}}}},
		}, errs: []string{"spec.tls[0].route: TLS route is required"}},
		{name: "tcp route", spec: &networking.VirtualService{
			Hosts: []string{"db"},
			Tcp:   []*networking.TCPRoute{{Match: []*networking.L4MatchAttributes{{DestinationSubnets: []string{"10.0.0.0/33"}}}}},
		}, errs: []string{"spec.tcp[0].route: TCP route is required", `spec.tcp[0].match[0].destinationSubnets[0]: 10.0.0.0/33 is not a valid CIDR block`}},
	})
}

func TestVirtualServiceReportsAllProblems(t *testing.T) {
	vs := &networking.VirtualService{
		Hosts: []string{"*"},
		Http: []*networking.HTTPRoute{
			{Name: "no-action"},
			{Match: []*networking.HTTPMatchRequest{{Uri: regexMatch("(")}}, Route: []*networking.HTTPRouteDestination{dest("")}},
		},
	}
	_, err := validation.ValidateVirtualService(netCfg(vs))
	want := []string{
		"spec.hosts[0]: wildcard host *",
		"spec.http[0]: HTTP route, redirect or direct_response is required",
		`spec.http[1].match[0].uri.regex: "uri": error parsing regexp`,
		"spec.http[1].route[0].destination.host: empty domain name not allowed (destination host is required)",
	}
	netExpect(t, "error", err, want)
	if n := len(validation.Problems(err)); n != len(want) {
		t.Errorf("got %d problems, want %d:\n%v", n, len(want), err)
	}
}

func TestNetworkingWrongSpecType(t *testing.T) {
	fns := map[string]validation.ValidateFunc{
		"VirtualService": validation.ValidateVirtualService, "DestinationRule": validation.ValidateDestinationRule,
		"Gateway": validation.ValidateGateway, "ServiceEntry": validation.ValidateServiceEntry,
		"Sidecar": validation.ValidateSidecar, "EnvoyFilter": validation.ValidateEnvoyFilter,
		"WorkloadEntry": validation.ValidateWorkloadEntry, "WorkloadGroup": validation.ValidateWorkloadGroup,
	}
	for kind, fn := range fns {
		_, err := fn(netCfg(&structpb.Struct{}))
		if err == nil || !strings.Contains(err.Error(), "cannot cast to "+kind) {
			t.Errorf("%s: want cast error, got %v", kind, err)
		}
		if _, err := fn(netCfg(nil)); err == nil || !strings.Contains(err.Error(), "cannot cast to "+kind) {
			t.Errorf("%s: want cast error for nil spec, got %v", kind, err)
		}
	}
}

// TestNetworkingNilSpecs makes sure typed nil specs and nil list entries are
// reported, never a panic.
func TestNetworkingNilSpecs(t *testing.T) {
	specs := []any{
		(*networking.VirtualService)(nil), (*networking.DestinationRule)(nil), (*networking.Gateway)(nil),
		(*networking.ServiceEntry)(nil), (*networking.Sidecar)(nil), (*networking.EnvoyFilter)(nil),
		(*networking.WorkloadEntry)(nil), (*networking.WorkloadGroup)(nil),
	}
	fns := []validation.ValidateFunc{
		validation.ValidateVirtualService, validation.ValidateDestinationRule, validation.ValidateGateway,
		validation.ValidateServiceEntry, validation.ValidateSidecar, validation.ValidateEnvoyFilter,
		validation.ValidateWorkloadEntry, validation.ValidateWorkloadGroup,
	}
	for i, fn := range fns {
		if _, err := fn(netCfg(specs[i])); err == nil && i != 5 {
			t.Errorf("%T: expected an error for an empty spec", specs[i])
		}
	}
	_, _ = validation.ValidateVirtualService(netCfg(&networking.VirtualService{
		Hosts: []string{"a"},
		Http: []*networking.HTTPRoute{{
			Match:      []*networking.HTTPMatchRequest{nil, {Headers: map[string]*networking.StringMatch{"a": nil}}},
			Route:      []*networking.HTTPRouteDestination{nil},
			Fault:      &networking.HTTPFaultInjection{Abort: &networking.HTTPFaultInjection_Abort{}, Delay: &networking.HTTPFaultInjection_Delay{}},
			Mirrors:    []*networking.HTTPMirrorPolicy{nil, {}},
			CorsPolicy: &networking.CorsPolicy{AllowOrigins: []*networking.StringMatch{nil}},
			Headers:    &networking.Headers{},
		}},
		Tls: []*networking.TLSRoute{nil, {Match: []*networking.TLSMatchAttributes{nil}, Route: []*networking.RouteDestination{nil}}},
		Tcp: []*networking.TCPRoute{nil, {Match: []*networking.L4MatchAttributes{nil}}},
	}))
}
