package validation_test

import (
	"testing"

	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

func TestIstioMessagesVirtualService(t *testing.T) {
	vs := gvk.VirtualService
	runIstioCases(t, []istioCase{
		{name: "nothing", kind: vs, spec: `{hosts: [a]}`, errs: []string{"http, tcp or tls must be provided in virtual service"}},
		{name: "delegate", kind: vs, spec: `
gateways: [gw]
http: [{route: [{destination: {host: a}}]}]
tls: [{match: [{sniHosts: [a]}], route: [{destination: {host: a}}]}]
tcp: [{route: [{destination: {host: a}}]}]`, errs: []string{
			"delegate virtual service must have no gateways specified",
			"delegate virtual service must have no tls route specified",
			"delegate virtual service must have no tcp route specified",
		}},
		{name: "hosts", kind: vs, spec: `{hosts: ["*", "a_b.com", "*.foo.com", "bar.foo.com"], http: [{route: [{destination: {host: a}}]}]}`, errs: []string{
			"wildcard host * is not allowed for virtual services bound to the mesh gateway",
			`domain name "a_b.com" invalid (label "a_b" invalid)`,
		}},
		{name: "duplicate hosts", kind: vs, spec: `{hosts: ["*.foo.com", "bar.foo.com"], http: [{route: [{destination: {host: a}}]}]}`,
			errs: []string{"duplicate hosts in virtual service: *.foo.com & bar.foo.com"}},
		{name: "gateway names", kind: vs, spec: `
hosts: [a.com]
gateways: ["ns/", "Bad_NS/gw", "ns/gw~x", "gw.ns", "bad_gw"]
http: [{route: [{destination: {host: a}}]}]`, errs: []string{
			"config namespace and gateway name cannot be empty",
			`invalid value for namespace: "Bad_NS"`,
			`invalid value for gateway name: "gw~x"`,
			`domain name "bad_gw" invalid (label "bad_gw" invalid)`,
		}, warns: []string{`using legacy gatewayName format "gw.ns"; prefer the <namespace>/<name> format: "ns/gw"`}},
		{name: "jwt claim routing", kind: vs, spec: `
hosts: [a]
http: [{match: [{headers: {"@request.auth.claims.group": {exact: g}}}], route: [{destination: {host: a}}]}]`,
			errs: []string{"JWT claim based routing (key: @request.auth.claims.group) is only supported for gateway, found no gateways: []"}},
		{name: "route conflicts", kind: vs, spec: `
hosts: [a]
http:
- {redirect: {uri: /x}, route: [{destination: {host: a}}], fault: {abort: {httpStatus: 500}}, rewrite: {uri: /y}, directResponse: {status: 200}}
- {directResponse: {status: 200}, route: [{destination: {host: a}}], fault: {abort: {httpStatus: 500}}, rewrite: {uri: /y}}
- {match: [{uri: {prefix: /z}}]}
- {route: [{destination: {host: a}}], mirror: {host: b}, mirrors: [{destination: {host: c}}]}`, errs: []string{
			"HTTP route cannot contain both route and redirect",
			"HTTP route cannot contain both fault and redirect",
			"HTTP route rule cannot contain both rewrite and redirect",
			"HTTP route rule cannot contain both direct_response and redirect",
			"HTTP route cannot contain both route and direct_response",
			"HTTP route cannot contain both fault and direct_response",
			"HTTP route rule cannot contain both rewrite and direct_response",
			"HTTP route, redirect or direct_response is required",
			"HTTP route cannot contain both mirror and mirrors",
		}},
		{name: "root route", kind: vs, spec: `
hosts: [a]
http: [{name: r, delegate: {name: d}, redirect: {uri: /x}, route: [{destination: {host: a}}]}]`, errs: []string{
			"root HTTP route r must not specify redirect",
			"root HTTP route r must not specify route",
		}},
		{name: "delegate in delegate", kind: vs, spec: `{http: [{delegate: {name: d}}]}`, errs: []string{"delegate HTTP route cannot contain delegate"}},
		{name: "matches", kind: vs, spec: `
hosts: [a]
http:
- match:
  - uri: {regex: "("}
    scheme: {prefix: ""}
    method: {regex: ""}
    headers: {"x y": {exact: a}, "x-a": {regex: "["}}
    queryParams: {q: {prefix: ""}}
    port: 70000
    sourceNamespace: "Bad_NS"
    sourceLabels: {"bad key!": a}
  route: [{destination: {host: a}}]`, errs: []string{
			`"uri": error parsing regexp: missing closing ): ` + "`(`" + `; Istio uses RE2 style regex-based match (https://github.com/google/re2/wiki/Syntax)`,
			`"scheme": prefix string match should not be empty`,
			`"method": regex string match should not be empty`,
			"header name x y is not a valid header name",
			`"headers": error parsing regexp`,
			`"queryParams": prefix string match should not be empty`,
			"port number 70000 must be in the range 1..65535",
			"sourceNamespace match Bad_NS is invalid",
			`invalid tag key: "bad key!"`,
		}},
		{name: "pseudo and token headers are fine", kind: vs, spec: `
hosts: [a]
http: [{match: [{headers: {":authority": {exact: a}, "x.y": {exact: b}}}], route: [{destination: {host: a}}]}]`},
		{name: "header operations", kind: vs, spec: `
hosts: [a]
http:
- route: [{destination: {host: a}, headers: {response: {set: {host: x}}}}]
  headers:
    request: {set: {":path": x, "x-a": "abc%"}, add: {"x-b": "%UNTERMINATED"}, remove: [host]}
    response: {add: {"x-c": "%A(["}}`, errs: []string{
			`invalid header ":path": header cannot have ":" prefix`,
			`invalid header "host": cannot set Host header`,
			"header value configuration: invalid header configuration. Un-escaped %",
			"header value configuration: invalid header configuration. Un-terminated variable expression '%UNTERMINATED'",
			"header value configuration: invalid header configuration. Un-terminated variable expression '%A(['",
		}},
		{name: "header value syntax", kind: vs, spec: `
hosts: [a]
http:
- route: [{destination: {host: a}}]
  headers:
    request:
      set: {a: '%A(["x" y', b: '%A([x', c: '%A(["x"] y', d: '%A(["x"]) y', e: "a\u0001"}`, errs: []string{
			"invalid header configuration. Expecting ',', ']', or whitespace",
			`invalid header configuration. Expecting '"'`,
			"invalid header configuration. Expecting ')' or whitespace after '{}', but found '{}'",
			"invalid header configuration. Expecting '%' or whitespace after",
			"header value configuration a\u0001 is invalid",
		}},
		{name: "authority set twice", kind: vs, spec: `
hosts: [a]
http: [{route: [{destination: {host: a}}], rewrite: {authority: x}, headers: {request: {set: {":authority": yy}}}}]`,
			errs: []string{`authority header cannot be set multiple times: have "x", attempting to set "yy"`}},
		{name: "cors", kind: vs, spec: `
hosts: [a]
http:
- route: [{destination: {host: a}}]
  corsPolicy: {allowOrigins: [{exact: ""}, {regex: "("}], allowMethods: [FOO], allowHeaders: ["a b"], maxAge: 1.5s}`, errs: []string{
			"'' is not a valid match type for CORS allow origins",
			`"corsPolicy.allowOrigins": error parsing regexp`,
			`"FOO" is not a supported HTTP method`,
			"header name a b is not a valid header name",
			"max_age duration is accurate only to seconds precision",
		}},
		{name: "fault", kind: vs, spec: `
hosts: [a]
http:
- {route: [{destination: {host: a}}], fault: {}}
- {route: [{destination: {host: a}}], fault: {abort: {grpcStatus: BAD, percentage: {value: 101}}}}
- {route: [{destination: {host: a}}], fault: {abort: {http2Error: x}}}
- {route: [{destination: {host: a}}], fault: {abort: {httpStatus: 700}}}
- {route: [{destination: {host: a}}], fault: {abort: {percentage: {value: 10}}}}
- {route: [{destination: {host: a}}], fault: {delay: {exponentialDelay: 1s}}}`, errs: []string{
			"HTTP fault injection must have an abort and/or a delay",
			`gRPC status "BAD" is not supported. See https://github.com/grpc/grpc/blob/master/doc/statuscodes.md for a list of supported codes, for example 'NOT_FOUND'`,
			"percentage 101 is neither 0.0, nor in range [0.0001, 100.0]",
			"HTTP/2 abort fault injection not supported yet",
			"HTTP status 700 is not in range 200-599",
			"exponentialDelay not supported yet",
		}, warns: []string{"abort configured, but error type not set"}},
		{name: "destinations", kind: vs, spec: `
hosts: [a]
http:
- route: [{destination: {host: "*"}}, {destination: {host: a, subset: "v_1", port: {number: 0}}, weight: -1}]
- route: [{}, {destination: {host: b}}]
- route: [{destination: {host: a}, weight: 0}, {destination: {host: b}, weight: 0}]`, errs: []string{
			"invalid destination host *",
			"subset name is invalid: v_1",
			"port number 0 must be in the range 1..65535",
			"weight -1 < 0",
			"destination is required",
			"total destination weight = 0",
		}},
		{name: "mirrors", kind: vs, spec: `
hosts: [a]
http:
- route: [{destination: {host: a}}]
  mirrors: [{}, {destination: {host: b}, percentage: {value: 101}}, {destination: {host: b}, percentage: {value: -1}}]
  mirrorPercentage: {value: 101}
- route: [{destination: {host: a}}]
  mirrorPercentage: {value: -1}
  mirrorPercent: 101`, errs: []string{
			"destination is required for mirrors",
			"mirror percentage must have a max value of 100 (it has 101.000000)",
			"mirror percentage must have a min value of 0 (it has -1.000000)",
			"mirror_percentage must have a max value of 100 (it has 101.000000)",
			"mirror_percentage must have a min value of 0 (it has -1.000000)",
			"mirror_percent must have a max value of 100 (it has 101)",
		}, warns: []string{`using deprecated setting "mirrorPercent", use "mirrorPercentage" instead`}},
		{name: "redirects", kind: vs, spec: `
hosts: [a]
http:
- redirect: {uri: /a, prefixRewrite: /b}
- redirect: {redirectCode: 200}
- redirect: {uri: /a, redirectCode: 200, scheme: ftp}
- {match: [{uri: {exact: /a}}], redirect: {prefixRewrite: /b}}`, errs: []string{
			"redirect may only specify one of uri or prefix_rewrite",
			"redirect must specify URI, authority, scheme, or port",
			"200 is not a valid redirect code, must be 3xx",
			`invalid redirect scheme, must be "http" or "https"`,
			"redirect prefix_rewrite requires all URI matches to use prefix match type",
		}},
		{name: "direct response", kind: vs, spec: `{hosts: [a], http: [{directResponse: {status: 100}}]}`,
			errs: []string{"HTTP status 100 is not in range 200-599"}},
		{name: "rewrites", kind: vs, spec: `
hosts: [a]
http:
- {route: [{destination: {host: a}}], rewrite: {uri: /a, uriRegexRewrite: {match: a, rewrite: b}}}
- {route: [{destination: {host: a}}], rewrite: {}}
- {route: [{destination: {host: a}}], rewrite: {uriRegexRewrite: {match: a}}}
- {route: [{destination: {host: a}}], rewrite: {uriRegexRewrite: {match: "(", rewrite: b}}}`, errs: []string{
			"rewrite may only contain one of URI or UriRegexRewrite",
			"rewrite must specify at least one of URI, UriRegexRewrite, or authority. Only one of URI or UriRegexRewrite may be specified",
			"UriRegexRewrite has errors",
			"UriRegexRewrite requires both Rewrite and Match fields to be specified",
			`"HTTPRewrite.UriRegexRewrite.Match": error parsing regexp`,
		}},
		{name: "retries", kind: vs, spec: `
hosts: [a]
http:
- {route: [{destination: {host: a}}], retries: {attempts: -1}}
- {route: [{destination: {host: a}}], retries: {attempts: 0, retryOn: 5xx}}
- {route: [{destination: {host: a}}], retries: {attempts: 2, retryOn: "5xx,bogus", perTryTimeout: 0.0001s}}`, errs: []string{
			"attempts cannot be negative",
			"http retry policy configured when attempts are set to 0 (disabled)",
			`"bogus" is not a valid retryOn policy`,
			"duration must be greater than 1ms",
		}},
		{name: "tls routes", kind: vs, spec: `
hosts: [a.com]
tls:
- route: [{destination: {host: a}}]
- match: [{}, {sniHosts: [b.com], destinationSubnets: ["10.0.0.0/33"]}]`, errs: []string{
			"TLS route must have at least one match condition",
			"TLS match must have at least one SNI host",
			`SNI host "b.com" is not a compatible subset of any of the virtual service hosts: [a.com]`,
			"10.0.0.0/33 is not a valid CIDR block",
			"TLS route is required",
		}},
		{name: "sni ip", kind: vs, spec: `{hosts: [a.com], tls: [{match: [{sniHosts: [1.2.3.4]}], route: [{destination: {host: a}}]}]}`,
			warns: []string{`using an IP address ("1.2.3.4") goes against SNI spec and most clients do not support this`}},
		{name: "tcp routes", kind: vs, spec: `{hosts: [a], tcp: [{match: [{destinationSubnets: [nope]}]}]}`, errs: []string{
			"nope is not a valid IP",
			"TCP route is required",
		}},
		{name: "exportTo", kind: vs, spec: `{hosts: [a], http: [{route: [{destination: {host: a}}]}], exportTo: ["~"]}`,
			errs: []string{"exportTo ~ (none) is not allowed for Istio configuration objects"}},
		{name: "unreachable rules", kind: vs, spec: `
hosts: [a]
http:
- {name: first, route: [{destination: {host: a}}]}
- {route: [{destination: {host: a}}]}
- {match: [{uri: {exact: /x}}], route: [{destination: {host: a}}]}`, warns: []string{
			"virtualService rule #1 not used (only the last rule can have no matches)",
			"virtualService rule #2 not used (route without matches defined before)",
		}},
		{name: "duplicate matches", kind: vs, spec: `
hosts: [a]
http:
- {match: [{uri: {exact: /x}}], route: [{destination: {host: a}}]}
- {name: second, match: [{name: m, uri: {exact: /x}}], route: [{destination: {host: a}}]}`, warns: []string{
			`virtualService rule "second" match "m" is not used (duplicate/overlapping match in rule #0)`,
			`virtualService rule "second" not used (all matches used by prior rules)`,
		}},
	})
}
