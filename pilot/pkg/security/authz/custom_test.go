package authz_test

import (
	"fmt"
	"strings"
	"testing"

	extauthzhttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	extauthztcp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ext_authz/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	authzpb "istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/security/authz"
	"github.com/meshplane/istiod/pkg/config"
)

type hcmFilter = hcm.HttpFilter

func meshWith(td string, aliases ...string) *meshconfig.MeshConfig {
	return &meshconfig.MeshConfig{TrustDomain: td, TrustDomainAliases: aliases}
}

// knownServices is a ClusterLookup over <name>.<ns>.svc.cluster.local hosts.
func knownServices(hosts ...string) authz.ClusterLookup {
	return func(service string, port uint32) (string, string, error) {
		h := service
		if _, after, ok := strings.Cut(service, "/"); ok {
			h = after
		}
		for _, k := range hosts {
			if k == h {
				return h, fmt.Sprintf("outbound|%d||%s", port, h), nil
			}
		}
		return "", "", fmt.Errorf("could not find service %s in Istio service registry", service)
	}
}

func grpcProvider(name, service string, port uint32) *meshconfig.MeshConfig_ExtensionProvider {
	return &meshconfig.MeshConfig_ExtensionProvider{Name: name, Provider: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzGrpc{
		EnvoyExtAuthzGrpc: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationGrpcProvider{Service: service, Port: port},
	}}
}

func grpcProviderOptions() authz.Options {
	return authz.Options{
		Mesh:          &meshconfig.MeshConfig{ExtensionProviders: []*meshconfig.MeshConfig_ExtensionProvider{grpcProvider("ext", "ext.ns.svc.cluster.local", 9000)}},
		LookupCluster: knownServices("ext.ns.svc.cluster.local"),
	}
}

func customPolicy(name, provider string, rules ...*authzpb.Rule) config.Config {
	return policyConfig("ns", name, &authzpb.AuthorizationPolicy{Action: authzpb.AuthorizationPolicy_CUSTOM, Rules: rules,
		ActionDetail: &authzpb.AuthorizationPolicy_Provider{Provider: &authzpb.AuthorizationPolicy_ExtensionProvider{Name: provider}}})
}

var getOnly = &authzpb.Rule{To: []*authzpb.Rule_To{{Operation: &authzpb.Operation{Methods: []string{"GET"}}}}}

const getOnlyPolicy = `{"permissions":[{"andRules":{"rules":[{"orRules":{"rules":[{"header":{"name":":method","stringMatch":{"exact":"GET"}}}]}}]}}],"principals":[{"andIds":{"ids":[{"any":true}]}}]}`

func TestCustomGRPCProvider(t *testing.T) {
	opts := grpcProviderOptions()
	g := opts.Mesh.ExtensionProviders[0].GetEnvoyExtAuthzGrpc()
	g.FailOpen, g.StatusOnError = true, "403"
	g.IncludeRequestBodyInCheck = &meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationRequestBody{MaxRequestBytes: 1024, AllowPartialMessage: true}
	cfgs := []config.Config{customPolicy("p", "ext", getOnly)}

	f := authz.BuildHTTP(cfgs, opts)
	if len(f.Custom) != 2 || len(f.Local) != 0 || len(f.Warnings) != 0 {
		t.Fatalf("custom %d local %d warnings %v", len(f.Custom), len(f.Local), f.Warnings)
	}
	sameJSON(t, httpRBAC(t, f.Custom[0]), `{"shadowRules":{"action":"DENY","policies":{"istio-ext-authz-ext-ns[ns]-policy[p]-rule[0]":`+getOnlyPolicy+`}},"shadowRulesStatPrefix":"istio_ext_authz_"}`)
	sameJSON(t, unpack(t, f.Custom[1].GetTypedConfig(), &extauthzhttp.ExtAuthz{}), `{
		"grpcService":{"envoyGrpc":{"clusterName":"outbound|9000||ext.ns.svc.cluster.local","authority":"ext.ns.svc.cluster.local"},"timeout":"600s"},
		"failureModeAllow":true,"statusOnError":{"code":"Forbidden"},"transportApiVersion":"V3",
		"withRequestBody":{"maxRequestBytes":1024,"allowPartialMessage":true},
		"filterEnabledMetadata":{"filter":"envoy.filters.http.rbac","path":[{"key":"istio_ext_authz_shadow_effective_policy_id"}],"value":{"stringMatch":{"prefix":"istio-ext-authz-ext"}}}}`)

	tf := authz.BuildTCP(cfgs, opts)
	if len(tf.Custom) != 2 {
		t.Fatalf("TCP custom %d", len(tf.Custom))
	}
	sameJSON(t, tcpRBAC(t, tf.Custom[0]), `{"shadowRules":{"action":"DENY","policies":{"istio-ext-authz-ext-ns[ns]-policy[p]-rule[0]":`+anyAny+`}},"shadowRulesStatPrefix":"istio_ext_authz_","statPrefix":"tcp."}`)
	sameJSON(t, unpack(t, tf.Custom[1].GetTypedConfig(), &extauthztcp.ExtAuthz{}), `{"statPrefix":"tcp.",
		"grpcService":{"envoyGrpc":{"clusterName":"outbound|9000||ext.ns.svc.cluster.local","authority":"ext.ns.svc.cluster.local"},"timeout":"600s"},
		"failureModeAllow":true,"transportApiVersion":"V3",
		"filterEnabledMetadata":{"filter":"envoy.filters.network.rbac","path":[{"key":"istio_ext_authz_shadow_effective_policy_id"}],"value":{"stringMatch":{"prefix":"istio-ext-authz-ext"}}}}`)
	if len(tf.Warnings) != 1 || tf.Warnings[0].Kind != authz.HTTPOnly {
		t.Errorf("TCP warnings %v", tf.Warnings)
	}
}

func TestCustomHTTPProvider(t *testing.T) {
	opts := authz.Options{
		Mesh: &meshconfig.MeshConfig{ExtensionProviders: []*meshconfig.MeshConfig_ExtensionProvider{{Name: "web", Provider: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzHttp{
			EnvoyExtAuthzHttp: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationHttpProvider{
				Service: "ns/authz.ns.svc.cluster.local", Port: 8000, Timeout: durationpb.New(2e9), PathPrefix: "/check", StatusOnError: "503",
				IncludeRequestHeadersInCheck:    []string{"Authorization", "x-ext-*"},
				IncludeHeadersInCheck:           []string{"ignored"},
				IncludeAdditionalHeadersInCheck: map[string]string{"x-b": "2", "x-a": "1"},
				HeadersToUpstreamOnAllow:        []string{"*-user"},
				HeadersToDownstreamOnDeny:       []string{"set-cookie"},
			},
		}}}},
		LookupCluster: knownServices("authz.ns.svc.cluster.local"),
	}
	cfgs := []config.Config{customPolicy("p", "web", getOnly)}
	f := authz.BuildHTTP(cfgs, opts)
	if len(f.Custom) != 2 || len(f.Warnings) != 0 {
		t.Fatalf("custom %d warnings %v", len(f.Custom), f.Warnings)
	}
	sameJSON(t, unpack(t, f.Custom[1].GetTypedConfig(), &extauthzhttp.ExtAuthz{}), `{
		"httpService":{"serverUri":{"uri":"http://authz.ns.svc.cluster.local","cluster":"outbound|8000||authz.ns.svc.cluster.local","timeout":"2s"},
			"pathPrefix":"/check",
			"authorizationRequest":{"headersToAdd":[{"key":"x-a","value":"1"},{"key":"x-b","value":"2"}]},
			"authorizationResponse":{"allowedUpstreamHeaders":{"patterns":[{"suffix":"-user","ignoreCase":true}]},
				"allowedClientHeaders":{"patterns":[{"exact":"set-cookie","ignoreCase":true}]}}},
		"statusOnError":{"code":"ServiceUnavailable"},"transportApiVersion":"V3",
		"allowedHeaders":{"patterns":[{"exact":"Authorization","ignoreCase":true},{"prefix":"x-ext-","ignoreCase":true}]},
		"filterEnabledMetadata":{"filter":"envoy.filters.http.rbac","path":[{"key":"istio_ext_authz_shadow_effective_policy_id"}],"value":{"stringMatch":{"prefix":"istio-ext-authz-web"}}}}`)

	// An HTTP provider does not apply to TCP.
	tf := authz.BuildTCP(cfgs, opts)
	if len(tf.Custom) != 0 {
		t.Errorf("TCP filters %d", len(tf.Custom))
	}
	if !hasPolicyWarning(tf.Warnings, "provider web is an HTTP ext_authz provider") {
		t.Errorf("TCP warnings %v", tf.Warnings)
	}
}

func hasPolicyWarning(ws []authz.Warning, reason string) bool {
	for _, w := range ws {
		if w.Kind == authz.InvalidPolicy && strings.Contains(w.Reason, reason) {
			return true
		}
	}
	return false
}

// A CUSTOM policy whose provider cannot be used denies what it matches.
func TestCustomBadProvider(t *testing.T) {
	bad := func(mod func(*meshconfig.MeshConfig_ExtensionProvider)) authz.Options {
		o := grpcProviderOptions()
		mod(o.Mesh.ExtensionProviders[0])
		return o
	}
	grpc := func(p *meshconfig.MeshConfig_ExtensionProvider) *meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationGrpcProvider {
		return p.GetEnvoyExtAuthzGrpc()
	}
	for _, c := range []struct {
		name, reason string
		opts         authz.Options
	}{
		{"unknown provider", `available providers are [ext] but found "nope"`, grpcProviderOptions()},
		{"unknown service", "could not find service other.ns.svc.cluster.local", bad(func(p *meshconfig.MeshConfig_ExtensionProvider) { grpc(p).Service = "other.ns.svc.cluster.local" })},
		{"no lookup", "no cluster lookup configured", func() authz.Options { o := grpcProviderOptions(); o.LookupCluster = nil; return o }()},
		{"bad port", "port must be in the range [1, 65535], found: 0", bad(func(p *meshconfig.MeshConfig_ExtensionProvider) { grpc(p).Port = 0 })},
		{"bad status", "unsupported statusOnError 999", bad(func(p *meshconfig.MeshConfig_ExtensionProvider) { grpc(p).StatusOnError = "999" })},
		{"bad name", "uppercase letters not allowed", bad(func(p *meshconfig.MeshConfig_ExtensionProvider) { p.Name = "Ext" })},
		{"duplicate", "must be unique", func() authz.Options {
			o := grpcProviderOptions()
			o.Mesh.ExtensionProviders = append(o.Mesh.ExtensionProviders, grpcProvider("ext", "ext.ns.svc.cluster.local", 9001))
			return o
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			provider := "ext"
			if c.name == "unknown provider" {
				provider = "nope"
			} else if c.name == "bad name" {
				provider = "Ext"
			}
			cfgs := []config.Config{customPolicy("p", provider, getOnly)}
			f := authz.BuildHTTP(cfgs, c.opts)
			if len(f.Custom) != 1 {
				t.Fatalf("custom filters %d", len(f.Custom))
			}
			sameJSON(t, httpRBAC(t, f.Custom[0]), `{"rules":{"action":"DENY","policies":{"istio-ext-authz-`+provider+`-ns[ns]-policy[p]-rule[0]-deny-due-to-bad-CUSTOM-action":`+getOnlyPolicy+`}}}`)
			if !hasPolicyWarning(f.Warnings, c.reason) {
				t.Errorf("warnings %v, want %q", f.Warnings, c.reason)
			}
			tf := authz.BuildTCP(cfgs, c.opts)
			if len(tf.Custom) != 1 {
				t.Fatalf("TCP custom filters %d", len(tf.Custom))
			}
			sameJSON(t, tcpRBAC(t, tf.Custom[0]), `{"statPrefix":"tcp.","rules":{"action":"DENY","policies":{"istio-ext-authz-`+provider+`-ns[ns]-policy[p]-rule[0]-deny-due-to-bad-CUSTOM-action":`+anyAny+`}}}`)
		})
	}
}

func TestCustomMultipleProviders(t *testing.T) {
	opts := grpcProviderOptions()
	opts.Mesh.ExtensionProviders = append(opts.Mesh.ExtensionProviders, grpcProvider("another", "ext.ns.svc.cluster.local", 9001))
	cfgs := []config.Config{customPolicy("p", "ext", getOnly), customPolicy("q", "another", &authzpb.Rule{})}

	f := authz.BuildHTTP(cfgs, opts)
	var names []string
	for _, x := range f.Custom {
		for n := range httpRBAC(t, x).GetRules().GetPolicies() {
			names = append(names, n)
		}
	}
	if got := strings.Join(names, " "); got != "istio-ext-authz-another-ns[ns]-policy[q]-rule[0]-deny-due-to-bad-CUSTOM-action istio-ext-authz-ext-ns[ns]-policy[p]-rule[0]-deny-due-to-bad-CUSTOM-action" {
		t.Errorf("without the flag: %s", got)
	}
	if !hasPolicyWarning(f.Warnings, "PILOT_ENABLE_MULTIPLE_CUSTOM_AUTHZ_PROVIDERS") {
		t.Errorf("warnings %v", f.Warnings)
	}

	opts.MultipleCustomProviders = true
	f = authz.BuildHTTP(cfgs, opts)
	if len(f.Custom) != 4 || len(f.Warnings) != 0 {
		t.Fatalf("with the flag: %d filters, warnings %v", len(f.Custom), f.Warnings)
	}
	for i, provider := range []string{"another", "ext"} {
		shadow := httpRBAC(t, f.Custom[2*i]).GetShadowRules().GetPolicies()
		for n := range shadow {
			if !strings.HasPrefix(n, "istio-ext-authz-"+provider+"-") {
				t.Errorf("provider %s has rule %s", provider, n)
			}
		}
		e := unpack(t, f.Custom[2*i+1].GetTypedConfig(), &extauthzhttp.ExtAuthz{})
		if got := e.GetFilterEnabledMetadata().GetValue().GetStringMatch().GetPrefix(); got != "istio-ext-authz-"+provider {
			t.Errorf("provider %s enabled by %s", provider, got)
		}
	}
}

// Validation rejects dry-run CUSTOM policies; past it, Istio 1.31 puts them
// in the rules (not the shadow rules) of the CUSTOM RBAC filter.
func TestCustomDryRun(t *testing.T) {
	p := customPolicy("p", "ext", getOnly)
	p.Annotations = map[string]string{"istio.io/dry-run": "true"}
	f := authz.BuildHTTP([]config.Config{p}, grpcProviderOptions())
	if len(f.Custom) != 2 {
		t.Fatalf("filters %d", len(f.Custom))
	}
	sameJSON(t, httpRBAC(t, f.Custom[0]), `{"rules":{"action":"DENY","policies":{"istio-ext-authz-ext-ns[ns]-policy[p]-rule[0]":`+getOnlyPolicy+`}},
		"shadowRules":{"action":"DENY"},"shadowRulesStatPrefix":"istio_ext_authz_"}`)
	if !hasPolicyWarning(f.Warnings, "not supported for CUSTOM") {
		t.Errorf("warnings %v", f.Warnings)
	}
}
