package authz_test

import (
	"strings"
	"sync"
	"testing"

	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	authzpb "istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/security/authz"
	"github.com/meshplane/istiod/pkg/config"
)

const anyAny = `{"permissions":[{"andRules":{"rules":[{"any":true}]}}],"principals":[{"andIds":{"ids":[{"any":true}]}}]}`

// On a TCP chain an HTTP attribute leaves an ALLOW rule out and is dropped
// from a DENY or AUDIT rule (any/any when nothing else remains), with a
// warning naming the field.
func TestHTTPOnlyOnTCP(t *testing.T) {
	cases := []struct {
		field string
		rule  *authzpb.Rule
	}{
		{"to[0].operation.hosts", &authzpb.Rule{To: []*authzpb.Rule_To{{Operation: &authzpb.Operation{Hosts: []string{"h"}}}}}},
		{"to[0].operation.notHosts", &authzpb.Rule{To: []*authzpb.Rule_To{{Operation: &authzpb.Operation{NotHosts: []string{"h"}}}}}},
		{"to[0].operation.methods", &authzpb.Rule{To: []*authzpb.Rule_To{{Operation: &authzpb.Operation{Methods: []string{"GET"}}}}}},
		{"to[0].operation.notMethods", &authzpb.Rule{To: []*authzpb.Rule_To{{Operation: &authzpb.Operation{NotMethods: []string{"GET"}}}}}},
		{"to[0].operation.paths", &authzpb.Rule{To: []*authzpb.Rule_To{{Operation: &authzpb.Operation{Paths: []string{"/"}}}}}},
		{"to[0].operation.notPaths", &authzpb.Rule{To: []*authzpb.Rule_To{{Operation: &authzpb.Operation{NotPaths: []string{"/{*}"}}}}}},
		{"from[0].source.requestPrincipals", &authzpb.Rule{From: []*authzpb.Rule_From{{Source: &authzpb.Source{RequestPrincipals: []string{"*"}}}}}},
		{"from[0].source.notRequestPrincipals", &authzpb.Rule{From: []*authzpb.Rule_From{{Source: &authzpb.Source{NotRequestPrincipals: []string{"*"}}}}}},
		{"when[0].values (request.headers[x])", &authzpb.Rule{When: []*authzpb.Condition{{Key: "request.headers[x]", Values: []string{"1"}}}}},
		{"when[0].notValues (request.headers[x])", &authzpb.Rule{When: []*authzpb.Condition{{Key: "request.headers[x]", NotValues: []string{"1"}}}}},
		{"when[0].values (request.auth.principal)", &authzpb.Rule{When: []*authzpb.Condition{{Key: "request.auth.principal", Values: []string{"a/b"}}}}},
		{"when[0].values (request.auth.audiences)", &authzpb.Rule{When: []*authzpb.Condition{{Key: "request.auth.audiences", Values: []string{"a"}}}}},
		{"when[0].values (request.auth.presenter)", &authzpb.Rule{When: []*authzpb.Condition{{Key: "request.auth.presenter", Values: []string{"a"}}}}},
		{"when[0].values (request.auth.claims[iss])", &authzpb.Rule{When: []*authzpb.Condition{{Key: "request.auth.claims[iss]", Values: []string{"a"}}}}},
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			p, ws := oneRule(t, authzpb.AuthorizationPolicy_ALLOW, c.rule, true, authz.Options{})
			if p != nil {
				t.Errorf("ALLOW: rule kept on TCP: %v", p)
			}
			wantWarning(t, ws, authz.HTTPOnly, c.field, "the rule is left out of the TCP filter")
			for _, a := range []authzpb.AuthorizationPolicy_Action{authzpb.AuthorizationPolicy_DENY, authzpb.AuthorizationPolicy_AUDIT} {
				p, ws := oneRule(t, a, c.rule, true, authz.Options{})
				sameJSON(t, p, anyAny)
				wantWarning(t, ws, authz.HTTPOnly, c.field, "ignored, so the rule matches more TCP traffic")
			}
			// On HTTP: no warning.
			if _, ws := oneRule(t, authzpb.AuthorizationPolicy_ALLOW, c.rule, false, authz.Options{}); len(ws) != 0 {
				t.Errorf("HTTP warnings: %v", ws)
			}
		})
	}

	// TCP attributes stay; only the HTTP one goes.
	r := &authzpb.Rule{
		From: []*authzpb.Rule_From{{Source: &authzpb.Source{Principals: []string{"cluster.local/ns/a/sa/b"}, RequestPrincipals: []string{"*"}}}},
		To:   []*authzpb.Rule_To{{Operation: &authzpb.Operation{Ports: []string{"80"}, Methods: []string{"GET"}}}},
		When: []*authzpb.Condition{{Key: "destination.ip", Values: []string{"10.0.0.1"}}, {Key: "connection.sni", Values: []string{"a"}}},
	}
	p, ws := oneRule(t, authzpb.AuthorizationPolicy_DENY, r, true, authz.Options{})
	sameJSON(t, p, `{"permissions":[{"andRules":{"rules":[{"orRules":{"rules":[{"destinationPort":80}]}},
		{"orRules":{"rules":[{"destinationIp":{"addressPrefix":"10.0.0.1","prefixLen":32}}]}},{"orRules":{"rules":[{"requestedServerName":{"exact":"a"}}]}}]}}],
		"principals":[{"andIds":{"ids":[`+or(authn(exact("spiffe://cluster.local/ns/a/sa/b")))+`]}}]}`)
	if len(ws) != 2 {
		t.Errorf("want 2 warnings (requestPrincipals, methods), got %v", ws)
	}
}

func wantWarning(t *testing.T, ws []authz.Warning, kind authz.WarningKind, field, effect string) {
	t.Helper()
	for _, w := range ws {
		if w.Kind == kind && w.Field == field && strings.HasPrefix(w.Effect, effect) && w.Policy == "ns/p" && w.Rule == 0 {
			return
		}
	}
	t.Errorf("no warning kind %d field %q effect %q in %v", kind, field, effect, ws)
}

// A value that cannot be translated leaves an ALLOW rule out; a DENY rule
// keeps its other values.
func TestInvalidValues(t *testing.T) {
	cases := []struct {
		name, field string
		rule        *authzpb.Rule
		deny        string // the DENY rule's policy JSON
	}{
		{"ipBlocks", "from[0].source.ipBlocks", &authzpb.Rule{From: []*authzpb.Rule_From{{Source: &authzpb.Source{IpBlocks: []string{"not-an-ip", "1.2.3.4"}}}}},
			`{"permissions":[{"andRules":{"rules":[{"any":true}]}}],"principals":[{"andIds":{"ids":[` + or(`{"directRemoteIp":{"addressPrefix":"1.2.3.4","prefixLen":32}}`) + `]}}]}`},
		{"ports", "to[0].operation.ports", &authzpb.Rule{To: []*authzpb.Rule_To{{Operation: &authzpb.Operation{Ports: []string{"http", "70000"}}}}}, anyAny},
		{"header key", "when[0].values (request.headers)", &authzpb.Rule{When: []*authzpb.Condition{{Key: "request.headers", Values: []string{"x"}}}}, anyAny},
		{"envoy filter key", "when[0].values (experimental.envoy.filters.a)", &authzpb.Rule{When: []*authzpb.Condition{{Key: "experimental.envoy.filters.a", Values: []string{"x"}}}}, anyAny},
		{"claim key", "when[0].values (request.auth.claims[a]x)", &authzpb.Rule{When: []*authzpb.Condition{{Key: "request.auth.claims[a]x", Values: []string{"x"}}}}, anyAny},
		{"destination.ip", "when[0].notValues (destination.ip)", &authzpb.Rule{When: []*authzpb.Condition{{Key: "destination.ip", NotValues: []string{"10.0.0.0/33"}}}}, anyAny},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, ws := oneRule(t, authzpb.AuthorizationPolicy_ALLOW, c.rule, false, authz.Options{})
			if p != nil {
				t.Errorf("ALLOW: rule kept: %v", p)
			}
			wantWarning(t, ws, authz.InvalidRule, c.field, "the rule is left out")
			p, ws = oneRule(t, authzpb.AuthorizationPolicy_DENY, c.rule, false, authz.Options{})
			sameJSON(t, p, c.deny)
			wantWarning(t, ws, authz.InvalidRule, c.field, "ignored, so the rule matches more, which is denied")
		})
	}
}

// A rule with a when key Istio does not know is left out whatever the
// action; the policy's other rules stay.
func TestUnknownAttribute(t *testing.T) {
	for _, a := range []authzpb.AuthorizationPolicy_Action{authzpb.AuthorizationPolicy_ALLOW, authzpb.AuthorizationPolicy_DENY} {
		cfgs := []config.Config{policyConfig("ns", "p", &authzpb.AuthorizationPolicy{Action: a, Rules: []*authzpb.Rule{
			{When: []*authzpb.Condition{{Key: "request.size", Values: []string{"1"}}}},
			{},
		}})}
		f := authz.BuildHTTP(cfgs, authz.Options{})
		got := httpRBAC(t, f.Local[0]).GetRules().GetPolicies()
		if _, ok := got["ns[ns]-policy[p]-rule[0]"]; ok || len(got) != 1 {
			t.Errorf("%v: policies %v", a, got)
		}
		if len(f.Warnings) != 1 || f.Warnings[0].Error() != "AuthorizationPolicy ns/p rule 0: field when[0]: unknown attribute request.size; the rule is left out" {
			t.Errorf("%v: warnings %v", a, f.Warnings)
		}
	}
}

func TestIdioms(t *testing.T) {
	never := `{"permissions":[{"notRule":{"any":true}}],"principals":[{"notId":{"any":true}}]}`
	for _, c := range []struct {
		name   string
		action authzpb.AuthorizationPolicy_Action
		rules  []*authzpb.Rule
		want   string
	}{
		{"allow nothing", authzpb.AuthorizationPolicy_ALLOW, nil, never},
		{"allow all", authzpb.AuthorizationPolicy_ALLOW, []*authzpb.Rule{{}}, anyAny},
		{"deny all", authzpb.AuthorizationPolicy_DENY, []*authzpb.Rule{{}}, anyAny},
		{"deny nothing", authzpb.AuthorizationPolicy_DENY, nil, never},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfgs := []config.Config{policyConfig("ns", "p", &authzpb.AuthorizationPolicy{Action: c.action, Rules: c.rules})}
			for _, rules := range []*rbacpb.RBAC{
				httpRBAC(t, authz.BuildHTTP(cfgs, authz.Options{}).Local[0]).GetRules(),
				tcpRBAC(t, authz.BuildTCP(cfgs, authz.Options{}).Local[0]).GetRules(),
			} {
				if len(rules.GetPolicies()) != 1 {
					t.Fatalf("policies %v", rules.GetPolicies())
				}
				sameJSON(t, rules.GetPolicies()["ns[ns]-policy[p]-rule[0]"], c.want)
			}
		})
	}
}

func TestNoPolicies(t *testing.T) {
	h := authz.BuildHTTP(nil, authz.Options{})
	tc := authz.BuildTCP(nil, authz.Options{})
	if len(h.Custom)+len(h.Local)+len(tc.Custom)+len(tc.Local)+len(h.Warnings)+len(tc.Warnings) != 0 {
		t.Errorf("got %v %v", h, tc)
	}
}

// Filters come CUSTOM, then AUDIT, DENY, ALLOW, whatever the input order.
func TestFilterOrder(t *testing.T) {
	rule := []*authzpb.Rule{{}}
	cfgs := []config.Config{
		policyConfig("ns", "allow", &authzpb.AuthorizationPolicy{Action: authzpb.AuthorizationPolicy_ALLOW, Rules: rule}),
		policyConfig("ns", "deny", &authzpb.AuthorizationPolicy{Action: authzpb.AuthorizationPolicy_DENY, Rules: rule}),
		policyConfig("ns", "audit", &authzpb.AuthorizationPolicy{Action: authzpb.AuthorizationPolicy_AUDIT, Rules: rule}),
		policyConfig("ns", "ext", &authzpb.AuthorizationPolicy{Action: authzpb.AuthorizationPolicy_CUSTOM, Rules: rule,
			ActionDetail: &authzpb.AuthorizationPolicy_Provider{Provider: &authzpb.AuthorizationPolicy_ExtensionProvider{Name: "ext"}}}),
	}
	f := authz.BuildHTTP(cfgs, grpcProviderOptions())
	jwt := &hcmFilter{Name: "envoy.filters.http.jwt_authn"}
	var names []string
	for _, x := range f.With(jwt) {
		names = append(names, x.GetName())
	}
	if got := strings.Join(names, " "); got != "envoy.filters.http.rbac envoy.filters.http.ext_authz envoy.filters.http.jwt_authn envoy.filters.http.rbac envoy.filters.http.rbac envoy.filters.http.rbac" {
		t.Errorf("order %s", got)
	}
	var actions []string
	for _, x := range f.Local {
		actions = append(actions, httpRBAC(t, x).GetRules().GetAction().String())
	}
	if got := strings.Join(actions, " "); got != "LOG DENY ALLOW" {
		t.Errorf("actions %s", got)
	}
	tf := authz.BuildTCP(cfgs, grpcProviderOptions())
	names = nil
	for _, x := range tf.All() {
		names = append(names, x.GetName())
	}
	if got := strings.Join(names, " "); got != "envoy.filters.network.rbac envoy.filters.network.ext_authz envoy.filters.network.rbac envoy.filters.network.rbac envoy.filters.network.rbac" {
		t.Errorf("TCP order %s", got)
	}
}

// istio.io/dry-run puts a policy in the shadow rules, with the stat prefix
// of the shadow action; the ALLOW prefix is there even without shadow rules.
func TestDryRun(t *testing.T) {
	dry := func(c config.Config, v string) config.Config {
		c.Annotations = map[string]string{"istio.io/dry-run": v}
		return c
	}
	allow := policyConfig("ns", "a", &authzpb.AuthorizationPolicy{Rules: []*authzpb.Rule{{}}})
	deny := policyConfig("ns", "d", &authzpb.AuthorizationPolicy{Action: authzpb.AuthorizationPolicy_DENY, Rules: []*authzpb.Rule{{}}})
	for _, c := range []struct {
		name                string
		cfgs                []config.Config
		rules, shadow       []string // policy names; nil: absent
		prefix              string
		warnings            int
		rulesSet, shadowSet bool
	}{
		{name: "enforced", cfgs: []config.Config{allow}, rules: []string{"ns[ns]-policy[a]-rule[0]"}, rulesSet: true, prefix: "istio_dry_run_allow_"},
		{name: "dry-run allow", cfgs: []config.Config{dry(allow, "true")}, shadow: []string{"ns[ns]-policy[a]-rule[0]"}, shadowSet: true, prefix: "istio_dry_run_allow_"},
		{name: "dry-run deny", cfgs: []config.Config{dry(deny, "true")}, shadow: []string{"ns[ns]-policy[d]-rule[0]"}, shadowSet: true, prefix: "istio_dry_run_deny_"},
		{name: "mixed", cfgs: []config.Config{dry(allow, "true"), dry(policyConfig("ns", "b", &authzpb.AuthorizationPolicy{Rules: []*authzpb.Rule{{}}}), "false")},
			rules: []string{"ns[ns]-policy[b]-rule[0]"}, shadow: []string{"ns[ns]-policy[a]-rule[0]"}, rulesSet: true, shadowSet: true, prefix: "istio_dry_run_allow_"},
		{name: "invalid value is enforced", cfgs: []config.Config{dry(allow, "maybe")}, rules: []string{"ns[ns]-policy[a]-rule[0]"}, rulesSet: true, prefix: "istio_dry_run_allow_", warnings: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := authz.BuildHTTP(c.cfgs, authz.Options{})
			if len(f.Local) != 1 || len(f.Warnings) != c.warnings {
				t.Fatalf("filters %d warnings %v", len(f.Local), f.Warnings)
			}
			r := httpRBAC(t, f.Local[0])
			if (r.GetRules() != nil) != c.rulesSet || (r.GetShadowRules() != nil) != c.shadowSet {
				t.Fatalf("rules %v shadow %v", r.GetRules(), r.GetShadowRules())
			}
			for _, n := range c.rules {
				if r.GetRules().GetPolicies()[n] == nil {
					t.Errorf("rules lack %s", n)
				}
			}
			for _, n := range c.shadow {
				if r.GetShadowRules().GetPolicies()[n] == nil {
					t.Errorf("shadow rules lack %s", n)
				}
			}
			if r.GetShadowRulesStatPrefix() != c.prefix {
				t.Errorf("prefix %q, want %q", r.GetShadowRulesStatPrefix(), c.prefix)
			}
		})
	}
}

// Trust domain aliases: a principal of the local trust domain, an alias or
// cluster.local matches every trust domain of the mesh.
func TestTrustDomainAliases(t *testing.T) {
	opts := authz.Options{Mesh: meshWith("td1", "td2", "*-old")}
	principals := func(ps ...string) string {
		var ids []string
		for _, p := range ps {
			ids = append(ids, authn(p))
		}
		return list(or(ids...))
	}
	cases := []ruleCase{
		{name: "local", rule: from(&authzpb.Source{Principals: []string{"td1/ns/a/sa/b"}}),
			principals: principals(exact("spiffe://td1/ns/a/sa/b"), exact("spiffe://td2/ns/a/sa/b"), regex(`spiffe://.*-old/ns/a/sa/b`))},
		{name: "cluster.local", rule: from(&authzpb.Source{Principals: []string{"cluster.local/ns/a/sa/b"}}),
			principals: principals(exact("spiffe://td1/ns/a/sa/b"), exact("spiffe://td2/ns/a/sa/b"), regex(`spiffe://.*-old/ns/a/sa/b`))},
		{name: "alias", rule: from(&authzpb.Source{Principals: []string{"td2/ns/a/sa/b"}}),
			principals: principals(exact("spiffe://td1/ns/a/sa/b"), exact("spiffe://td2/ns/a/sa/b"), regex(`spiffe://.*-old/ns/a/sa/b`))},
		{name: "wildcard alias matched", rule: from(&authzpb.Source{Principals: []string{"x-old/ns/a/sa/b"}}),
			principals: principals(exact("spiffe://td1/ns/a/sa/b"), exact("spiffe://td2/ns/a/sa/b"), regex(`spiffe://.*-old/ns/a/sa/b`))},
		{name: "wildcard in the policy kept for the domains it covers", rule: from(&authzpb.Source{Principals: []string{"*2/ns/a/sa/b"}}),
			principals: principals(exact("spiffe://td1/ns/a/sa/b"), regex(`spiffe://.*2/ns/a/sa/b`), regex(`spiffe://.*-old/ns/a/sa/b`))},
		{name: "other trust domain kept", rule: from(&authzpb.Source{Principals: []string{"other/ns/a/sa/b"}}),
			principals: principals(exact("spiffe://other/ns/a/sa/b"))},
		{name: "any trust domain kept", rule: from(&authzpb.Source{Principals: []string{"*/ns/a/sa/b"}}),
			principals: principals(regex(`spiffe://.*/ns/a/sa/b`))},
		{name: "not a SPIFFE path kept", rule: from(&authzpb.Source{Principals: []string{"td1/ns/a"}}),
			principals: principals(exact("spiffe://td1/ns/a"))},
		{name: "notPrincipals too", rule: from(&authzpb.Source{NotPrincipals: []string{"td2/ns/a/sa/b"}}),
			principals: list(not(or(authn(exact("spiffe://td1/ns/a/sa/b")), authn(exact("spiffe://td2/ns/a/sa/b")), authn(regex(`spiffe://.*-old/ns/a/sa/b`)))))},
		{name: "when source.principal too", rule: &authzpb.Rule{When: []*authzpb.Condition{{Key: "source.principal", Values: []string{"td1/ns/a/sa/b"}}}},
			principals: principals(exact("spiffe://td1/ns/a/sa/b"), exact("spiffe://td2/ns/a/sa/b"), regex(`spiffe://.*-old/ns/a/sa/b`))},
		{name: "trustDomains expanded", rule: from(&authzpb.Source{TrustDomains: []string{"td2", "x", "td1"}}),
			principals: principals(prefix("spiffe://td1/"), prefix("spiffe://td2/"), regex(`spiffe://[^/]*-old/.*`), prefix("spiffe://x/"))},
	}
	runRuleCases(t, cases, opts)

	// Without aliases, cluster.local still means the mesh's trust domain.
	runRuleCases(t, []ruleCase{{name: "cluster.local is the local trust domain", rule: from(&authzpb.Source{Principals: []string{"cluster.local/ns/a/sa/b"}}),
		principals: principals(exact("spiffe://example.org/ns/a/sa/b"))}}, authz.Options{Mesh: meshWith("example.org")})
}

func from(s *authzpb.Source) *authzpb.Rule {
	return &authzpb.Rule{From: []*authzpb.Rule_From{{Source: s}}}
}

// A Builder is shared by concurrent builds.
func TestConcurrentBuilds(t *testing.T) {
	cfgs := []config.Config{
		policyConfig("ns", "ext", &authzpb.AuthorizationPolicy{Action: authzpb.AuthorizationPolicy_CUSTOM, Rules: []*authzpb.Rule{{}},
			ActionDetail: &authzpb.AuthorizationPolicy_Provider{Provider: &authzpb.AuthorizationPolicy_ExtensionProvider{Name: "ext"}}}),
		policyConfig("ns", "a", &authzpb.AuthorizationPolicy{Rules: []*authzpb.Rule{{From: []*authzpb.Rule_From{{Source: &authzpb.Source{Principals: []string{"cluster.local/ns/a/sa/b"}}}}}}}),
	}
	b := authz.New(grpcProviderOptions())
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if f := b.BuildHTTP(cfgs); len(f.Custom) != 2 || len(f.Local) != 1 {
					t.Errorf("filters %d %d", len(f.Custom), len(f.Local))
				}
				b.BuildTCP(cfgs)
			}
		}()
	}
	wg.Wait()
}

func TestWarningText(t *testing.T) {
	w := authz.Warning{Kind: authz.HTTPOnly, Policy: "ns/p", Rule: 1, Field: "to[0].operation.paths", Effect: "ignored, so the rule matches more TCP traffic, which is denied"}
	if got, want := w.Error(), "AuthorizationPolicy ns/p rule 1: field to[0].operation.paths is HTTP-only and does not apply to TCP traffic; ignored, so the rule matches more TCP traffic, which is denied"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	w.Port = 9102
	if got := w.Error(); !strings.Contains(got, "does not apply to TCP port 9102;") {
		t.Errorf("got %s", got)
	}
	p := authz.Warning{Kind: authz.InvalidPolicy, Policy: "ns/p", Rule: -1, Reason: "bad", Effect: "ignored"}
	if got := p.String(); got != "AuthorizationPolicy ns/p: bad; ignored" {
		t.Errorf("got %s", got)
	}
}

func TestNotAnAuthorizationPolicy(t *testing.T) {
	cfgs := []config.Config{{Meta: config.Meta{Namespace: "ns", Name: "x"}, Spec: &authzpb.Rule{}}}
	f := authz.BuildHTTP(cfgs, authz.Options{})
	if len(f.Local) != 0 || len(f.Warnings) != 1 || f.Warnings[0].Kind != authz.InvalidPolicy {
		t.Errorf("got %v", f)
	}
}
