package validation_test

import (
	"testing"

	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

func TestIstioMessagesAuthorizationPolicy(t *testing.T) {
	ap := gvk.AuthorizationPolicy
	// Istio prefixes every error with the policy's name and namespace
	const in = "invalid policy test.default: "
	runIstioCases(t, []istioCase{
		{name: "custom without provider", kind: ap, objName: "payments-ext-authz", spec: `{action: CUSTOM, rules: [{}]}`,
			errs: []string{"invalid policy payments-ext-authz.default: `provider.name` must not be empty"}},
		{name: "custom without rules", kind: ap, spec: `{action: CUSTOM, provider: {name: p}}`,
			errs: []string{in + "CUSTOM action without `rules` is meaningless as it will never be triggered, " +
				"add an empty rule `{}` if you want it be triggered for every request"}},
		{name: "deny without rules", kind: ap, spec: `{action: DENY}`,
			errs: []string{in + "DENY action without `rules` is meaningless as it will never be triggered, " +
				"add an empty rule `{}` if you want it be triggered for every request"}},
		{name: "provider without custom", kind: ap, spec: `{action: DENY, provider: {name: p}, rules: [{}]}`,
			errs: []string{in + "`provider` must not be with non CUSTOM action, found DENY"}},
		{name: "custom attributes", kind: ap, spec: `
action: CUSTOM
provider: {name: p}
rules:
- from: [{source: {namespaces: [a], notNamespaces: [a], principals: [a], notPrincipals: [a], requestPrincipals: [a],
          notRequestPrincipals: [a], trustDomains: [a], notTrustDomains: [a]}}, {source: {serviceAccounts: [a], notServiceAccounts: [a]}}]
  when: [{key: source.namespace, values: [a]}, {key: source.trustDomain, values: [a]}, {key: "request.auth.claims[a]", values: [a]}]`,
			errs: []string{
				in + "From.Namespaces is currently not supported with CUSTOM action",
				in + "From.NotNamespaces is currently not supported with CUSTOM action",
				in + "From.ServiceAccounts is currently not supported with CUSTOM action",
				in + "From.NotServiceAccounts is currently not supported with CUSTOM action",
				in + "From.TrustDomains is currently not supported with CUSTOM action",
				in + "From.NotTrustDomains is currently not supported with CUSTOM action",
				in + "From.Principals is currently not supported with CUSTOM action",
				in + "From.NotPrincipals is currently not supported with CUSTOM action",
				in + "From.RequestPrincipals is currently not supported with CUSTOM action",
				in + "From.NotRequestPrincipals is currently not supported with CUSTOM action",
				in + "source.namespace is currently not supported with CUSTOM action",
				in + "source.trustDomain is currently not supported with CUSTOM action",
				in + "request.auth.claims[a] is currently not supported with CUSTOM action",
			}},
		{name: "rule shapes", kind: ap, spec: `
rules:
- {}
- from: [{source: {}}, {}]
  to: [{operation: {}}, {}]`, errs: []string{
			in + "`from.source` must not be empty, found at rule 1",
			in + "`from.source` must not be nil, found at rule 1",
			in + "`to.operation` must not be empty, found at rule 1",
			in + "`to.operation` must not be nil, found at rule 1",
		}},
		{name: "source values", kind: ap, spec: `
rules:
- from:
  - source: {principals: [""], namespaces: [a], serviceAccounts: [a]}
  - source: {ipBlocks: [nope, "1.2.3.0/33"], notRemoteIpBlocks: [""]}
  - source: {serviceAccounts: ["a/b/c"], notServiceAccounts: ["*"]}
  - source: {trustDomains: ["a*b"], notTrustDomains: ["a/b"]}
  - source: {serviceAccounts: ["/sa"], notServiceAccounts: ["ns/"]}`, errs: []string{
			in + "empty value not allowed, found in Principals",
			in + "cannot set serviceAccounts with namespaces or principals, found at rule 0",
			in + "bad IP address (nope)",
			in + `bad CIDR range (1.2.3.0/33): netip.ParsePrefix("1.2.3.0/33"): prefix length out of range`,
			in + "empty value not allowed, found in NotRemoteIpBlocks",
			in + `expected format 'serviceAccount' or 'namespace/serviceAccount', found "a/b/c" in ServiceAccounts`,
			in + "wildcard not allowed, found in NotServiceAccounts",
			in + `wildcard is only allowed at the start or end, found in TrustDomains: "a*b"`,
			in + `trust domain must not contain '/', found in NotTrustDomains: "a/b"`,
			in + `expected format 'serviceAccount' or 'namespace/serviceAccount', found empty namespace "/sa" in ServiceAccounts`,
			in + `expected format 'serviceAccount' or 'namespace/serviceAccount', found empty serviceAccount "ns/" in NotServiceAccounts`,
		}},
		{name: "operation values", kind: ap, spec: `
rules:
- to:
  - operation: {ports: [http, "70000"], methods: [""], paths: ["/a/{**}/{*}", "/{a}", "/{*}/a b"]}`, errs: []string{
			in + `bad port (http): strconv.ParseUint: parsing "http": invalid syntax`,
			in + "bad port (70000): <nil>",
			in + "empty value not allowed, found in Methods",
			in + "invalid or unsupported path a/{**}/{*}, found in Paths. {**} is not the last operator",
		}},
		{name: "path templates", kind: ap, spec: `
rules:
- to: [{operation: {paths: ["/{a}"]}}, {operation: {notPaths: ["/{*}/a b"]}}]`, errs: []string{
			in + "invalid or unsupported path {a}, found in Paths. Contains '{' or '}' beyond a supported path template",
			in + "invalid or unsupported path {*}/a b, found in NotPaths. Contains segment a b with invalid string literal",
		}},
		{name: "conditions", kind: ap, spec: `
rules:
- when:
  - {key: ""}
  - {key: source.ip}
  - {key: source.ip, values: [nope]}
  - {key: destination.port, notValues: ["x"]}
  - {key: request.headers, values: [a]}
  - {key: destination.namespace, values: [a]}
  - {key: "destination.labels[app]", values: [a]}
  - {key: destination.name, values: [a]}
  - {key: foo, values: [a]}
  - {key: source.serviceAccount, values: ["*"]}
  - {key: request.auth.principal, values: [""]}`, errs: []string{
			in + "`key` must not be empty",
			in + "at least one of `values` or `notValues` must be set for key source.ip",
			in + "invalid `value` for `key` source.ip: bad IP address (nope)",
			in + `invalid ` + "`notValue`" + ` for ` + "`key`" + ` destination.port: bad port (x): strconv.ParseUint: parsing "x": invalid syntax`,
			in + "invalid `value` for `key` request.headers: bad key (request.headers): should have format a[b]",
			in + "invalid `value` for `key` destination.namespace: attribute destination.namespace is replaced by the metadata.namespace",
			in + "invalid `value` for `key` destination.labels[app]: attribute destination.labels[app] is replaced by the workload selector",
			in + "invalid `value` for `key` destination.name: deprecated attribute destination.name: only supported in v1alpha1",
			in + "invalid `value` for `key` foo: unknown attribute: foo",
			in + "invalid `value` for `key` source.serviceAccount: wildcard not allowed, found in source.serviceAccount",
			in + "invalid `value` for `key` request.auth.principal: empty value not allowed, found in request.auth.principal",
		}},
		{name: "attachment", kind: ap, spec: `
selector: {matchLabels: {app: a}}
targetRefs: [{kind: Service, name: a}, {kind: Pod, name: "", namespace: other}]`, errs: []string{
			in + "only one of targetRefs or workloadSelector can be set",
			in + "targetRef name must be set",
			in + "targetRef namespace must not be set; cross namespace referencing is not supported",
			in + "targetRef must be to one of [core/v1/Service networking.istio.io/v1/ServiceEntry gateway.networking.k8s.io/v1/Gateway " +
				"gateway.networking.k8s.io/v1/GatewayClass] but was /Pod",
		}},
		{name: "deny http attributes only", kind: ap, spec: `{action: DENY, rules: [{to: [{operation: {methods: [GET]}}]}]}`,
			warns: []string{"configured AuthorizationPolicy will deny all traffic to TCP ports under its scope due to the use of only " +
				"HTTP attributes in a DENY rule; it is recommended to explicitly specify the port"}},
		{name: "dry run", kind: ap, annotations: map[string]string{"istio.io/dry-run": "maybe"}, spec: `{rules: [{}]}`,
			errs: []string{`default/test has annotation istio.io/dry-run with invalid value (maybe): strconv.ParseBool: parsing "maybe": invalid syntax`}},
		{name: "dry run action", kind: ap, annotations: map[string]string{"istio.io/dry-run": "true"}, spec: `{action: AUDIT, rules: [{}]}`,
			errs: []string{"the annotation istio.io/dry-run currently only supports action ALLOW/DENY, found action AUDIT in default/test"}},
	})
}

func TestIstioMessagesAuthentication(t *testing.T) {
	ra, pa := gvk.RequestAuthentication, gvk.PeerAuthentication
	runIstioCases(t, []istioCase{
		{name: "jwt rules", kind: ra, spec: `
jwtRules:
- audiences: [""]
- {issuer: a, jwksUri: "ftp://a", fromHeaders: [{name: ""}], fromParams: [""], fromCookies: [""], timeout: 0.0001s}
- {issuer: a, jwksUri: "http://a:x"}
- {issuer: a, outputClaimToHeaders: [{claim: c}, {header: h}, {claim: c, header: ":authority"}]}`, errs: []string{
			"audience must be non-empty string",
			"issuer or jwksUri must be non-empty string",
			`URI scheme "ftp" is not supported`,
			"location header name must be non-empty string",
			"location query must be non-empty string",
			"cookie name must be non-empty string",
			"duration must be greater than 1ms",
			`parse "http://a:x": invalid port ":x" after host`,
			"outputClaimToHeaders header and claim value must be non-empty string",
			"header name :authority is not a valid header name",
		}},
		{name: "null rule elements", kind: ra, spec: "jwtRules:\n- \n- issuer: a\n  outputClaimToHeaders: [null]\n", errs: []string{
			"issuer or jwksUri must be non-empty string",
			"outputClaimToHeaders header and claim value must be non-empty string",
		}},
		{name: "private jwks", kind: ra, spec: `{jwtRules: [{issuer: a, jwks: '{"keys": [{"kty": "RSA", "n": "x", "e": "AQAB"}, {"kty": "oct", "k": "x"}]}'}]}`,
			warns: []string{"jwks key at index 1 contains private key material; only public keys are used for verification"}},
		{name: "targetRef", kind: ra, spec: `{targetRef: {group: "__", kind: Service, name: a}}`,
			errs: []string{"targetRef must be to one of [core/v1/Service networking.istio.io/v1/ServiceEntry gateway.networking.k8s.io/v1/Gateway " +
				"gateway.networking.k8s.io/v1/GatewayClass] but was __/Service"}},
		{name: "port level", kind: pa, spec: `{portLevelMtls: {"8080": {mode: STRICT}}}`,
			errs: []string{"mesh/namespace peer authentication cannot have port level mTLS"}},
		{name: "port range", kind: pa, spec: `{selector: {matchLabels: {app: a}}, portLevelMtls: {"0": {mode: STRICT}}}`,
			errs: []string{"port must be in range 1..65535"}},
		{name: "empty port level", kind: pa, spec: `{selector: {matchLabels: {app: a}}, portLevelMtls: {}}`,
			errs: []string{"port level mTLS, if defined, must have at least one element"}},
	})
}

func TestIstioMessagesTelemetryAndExtensions(t *testing.T) {
	tel, wasm, te := gvk.Telemetry, gvk.WasmPlugin, gvk.TrafficExtension
	runIstioCases(t, []istioCase{
		{name: "tracing", kind: tel, spec: `
tracing:
- providers: [{name: ""}, {name: b}]
  randomSamplingPercentage: 101
  customTags: {"": {literal: {value: x}}, a: {literal: {}}, b: {header: {}}, c: {environment: {}}}
- {}`, errs: []string{
			"providers.name may not be empty",
			"randomSamplingPercentage must be in range [0.0, 100.0]",
			"tag name may not be empty",
			"literal tag value may not be empty",
			"header tag name may not be empty",
			"environment tag name may not be empty",
		}, warns: []string{"multiple tracing is not currently supported", "multiple providers is not currently supported"}},
		{name: "metrics", kind: tel, spec: `
metrics:
- overrides:
  - match: {customMetric: ""}
    tagOverrides: {a: {operation: UPSERT}, b: {operation: REMOVE, value: x}}`, errs: []string{
			"customMetric may not be empty",
			"tagOverrides.value must be set when operation is UPSERT",
			"tagOverrides.value may only be set when operation is UPSERT",
		}},
		{name: "selector and targetRefs", kind: tel, spec: `{selector: {matchLabels: {app: a}}, targetRefs: [{kind: Service, name: a}]}`,
			errs: []string{"only one of targetRefs or workloadSelector can be set"}},
		{name: "access log filter", kind: tel, spec: `{accessLogging: [{filter: {expression: "a == ("}}]}`,
			errs: []string{"must be a valid CEL expression, "}},
		{name: "wasm", kind: wasm, spec: `
url: "#%blah$#@"
sha256: abc
vmConfig: {env: [{name: ""}, {name: a, valueFrom: HOST, value: x}]}
match: [{ports: [{number: 0}]}]`, errs: []string{
			`failed to parse url: parse "#%blah$#@": invalid URI for request`,
			"sha256 field must be 64 characters long",
			"spec.vmConfig.env invalid",
			"value may only be set when valueFrom is INLINE",
			"spec.Match[0].Ports[0] is out of range: 0",
		}},
		{name: "wasm url", kind: wasm, spec: `{}`, errs: []string{"url field needs to be set"}},
		{name: "wasm scheme", kind: wasm, spec: `{url: "fake://a/b", sha256: "zz00000000000000000000000000000000000000000000000000000000000000"}`, errs: []string{
			"url contains unsupported scheme: fake",
			"sha256 field must match [a-f0-9]{64} pattern",
		}},
		{name: "wasm duplicate env", kind: wasm, spec: `{url: "oci://a/b", vmConfig: {env: [{name: a}, {name: a}]}}`, errs: []string{"duplicate env"}},
		{name: "traffic extension", kind: te, spec: `{}`, errs: []string{"exactly one of wasm or lua must be set"}},
		{name: "lua", kind: te, spec: `{lua: {inlineCode: ""}, match: [{ports: [{number: 70000}]}]}`, errs: []string{
			"lua.inlineCode cannot be empty",
			"spec.Match[0].Ports[0] is out of range: 70000",
		}},
	})
}

func TestIstioMessagesEnvoyFilter(t *testing.T) {
	ef := gvk.EnvoyFilter
	runIstioCases(t, []istioCase{
		{name: "empty selector", kind: ef, spec: `{workloadSelector: {}}`,
			warns: []string{"Envoy filter: workload selector specified without labels, will be applied to all services in namespace"}},
		{name: "patches", kind: ef, spec: `
configPatches:
- {patch: {operation: ADD, value: {}}}
- {applyTo: CLUSTER}
- {applyTo: CLUSTER, patch: {}}
- {applyTo: CLUSTER, patch: {operation: ADD}}
- {applyTo: CLUSTER, match: {proxy: {proxyVersion: "("}}, patch: {operation: REMOVE}}`, errs: []string{
			"Envoy filter: missing applyTo",
			"Envoy filter: missing patch",
			"Envoy filter: missing patch operation",
			"Envoy filter: missing patch value for non-remove operation",
			"Envoy filter: invalid regex for proxy version, [error parsing regexp: missing closing ): `(`]",
		}},
		{name: "matches", kind: ef, spec: `
configPatches:
- {applyTo: LISTENER, match: {cluster: {name: a}}, patch: {operation: REMOVE}}
- {applyTo: HTTP_ROUTE, match: {listener: {}}, patch: {operation: REMOVE}}
- {applyTo: CLUSTER, match: {routeConfiguration: {}}, patch: {operation: REMOVE}}
- {applyTo: NETWORK_FILTER, match: {listener: {filterChain: {filter: {name: ""}}}}, patch: {operation: REMOVE}}
- {applyTo: NETWORK_FILTER, match: {listener: {filterChain: {filter: {name: a, subFilter: {name: b}}}}}, patch: {operation: REMOVE}}
- {applyTo: HTTP_FILTER, match: {listener: {filterChain: {filter: {name: a, subFilter: {name: b}}}}}, patch: {operation: REMOVE}}
- applyTo: HTTP_FILTER
  match: {listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager, subFilter: {}}}}}
  patch: {operation: REMOVE}`, errs: []string{
			"Envoy filter: applyTo for listener class objects cannot have non listener match",
			"Envoy filter: applyTo for http route class objects cannot have non route configuration match",
			"Envoy filter: applyTo for cluster class objects cannot have non cluster match",
			"Envoy filter: filter match has no name to match on",
			"Envoy filter: subfilter match can be used with applyTo HTTP_FILTER only",
			"Envoy filter: subfilter match requires filter match with envoy.filters.network.http_connection_manager",
			"Envoy filter: subfilter match has no name to match on",
		}},
		{name: "filter match on listener", kind: ef, spec: `
configPatches:
- {applyTo: LISTENER, match: {listener: {filterChain: {filter: {name: envoy.http_connection_manager}}}}, patch: {operation: MERGE, value: {}}}`,
			warns: []string{
				"Envoy filter: filter match has no effect when used with LISTENER",
				`using deprecated filter name "envoy.http_connection_manager"; use "envoy.filters.network.http_connection_manager" instead`,
			}},
		{name: "values", kind: ef, spec: `
configPatches:
- {applyTo: CLUSTER, patch: {operation: MERGE, value: {lb_policy: NO_SUCH}}}
- {applyTo: CLUSTER, patch: {operation: MERGE, value: {name: 5}}}
- applyTo: HTTP_FILTER
  patch: {operation: ADD, value: {name: a, typed_config: {"@type": "type.googleapis.com/envoy.config.filter.http.lua.v2.Lua"}}}`,
			errs: []string{
				`Envoy filter: unknown value "\"NO_SUCH\"" for enum envoy.config.cluster.v3.Cluster.LbPolicy`,
				"Envoy filter: json: cannot unmarshal number into Go value of type string",
				"referenced type unknown (hint: try using the v3 XDS API): Envoy filter: could not resolve Any message type: " +
					"type.googleapis.com/envoy.config.filter.http.lua.v2.Lua",
			}},
		{name: "long proxy version", kind: ef, spec: "configPatches: [{applyTo: CLUSTER, match: {proxy: {proxyVersion: \"" + longVersion + "\"}}, patch: {operation: REMOVE}}]",
			warns: []string{"Envoy filter: proxyVersion match exceeds 1024 characters and will be ignored"}},
	})
}

var longVersion = func() string {
	b := make([]byte, 1025)
	for i := range b {
		b[i] = 'a'
	}
	return string(b)
}()
