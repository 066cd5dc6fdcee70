package authz_test

import (
	"strings"
	"testing"

	authzpb "istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/security/authz"
)

const anyJSON = `[{"any":true}]`

type ruleCase struct {
	name string
	rule *authzpb.Rule
	// principals is the JSON of the ids the first principal ANDs,
	// permissions that of the rules the first permission ANDs; empty means
	// [{"any":true}].
	principals, permissions string
}

func runRuleCases(t *testing.T, cases []ruleCase, opts authz.Options) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, ws := oneRule(t, authzpb.AuthorizationPolicy_ALLOW, c.rule, false, opts)
			for _, w := range ws {
				t.Errorf("unexpected warning: %v", w)
			}
			if p == nil {
				t.Fatal("rule left out")
			}
			want := func(s string) string {
				if s == "" {
					return anyJSON
				}
				return s
			}
			sameJSON(t, p.GetPrincipals()[0].GetAndIds(), `{"ids":`+want(c.principals)+`}`)
			sameJSON(t, p.GetPermissions()[0].GetAndRules(), `{"rules":`+want(c.permissions)+`}`)
		})
	}
}

func authn(m string) string { return `{"authenticated":{"principalName":` + m + `}}` }

func or(ids ...string) string  { return `{"orIds":{"ids":[` + strings.Join(ids, ",") + `]}}` }
func not(id string) string     { return `{"notId":` + id + `}` }
func orP(rs ...string) string  { return `{"orRules":{"rules":[` + strings.Join(rs, ",") + `]}}` }
func notP(r string) string     { return `{"notRule":` + r + `}` }
func list(xs ...string) string { return `[` + strings.Join(xs, ",") + `]` }

func jwt(claim, m string) string {
	return `{"metadata":{"filter":"envoy.filters.http.jwt_authn","path":[{"key":"payload"},{"key":"` + claim + `"}],"value":{"stringMatch":` + m + `}}}`
}

func issSub(iss, sub string) string {
	return `{"andIds":{"ids":[` + jwt("iss", iss) + `,` + jwt("sub", sub) + `]}}`
}

// claimValues is the matcher of a JWT claim path against values (one
// string matcher each): an element of a list claim, or the claim itself.
func claimValues(path []string, ms ...string) string {
	var segs []string
	for _, p := range append([]string{"payload"}, path...) {
		segs = append(segs, `{"key":"`+p+`"}`)
	}
	var vs []string
	for _, m := range ms {
		vs = append(vs, `{"stringMatch":`+m+`}`)
	}
	v := vs[0]
	if len(vs) > 1 {
		v = `{"orMatch":{"valueMatchers":[` + strings.Join(vs, ",") + `]}}`
	}
	return `{"metadata":{"filter":"envoy.filters.http.jwt_authn","path":[` + strings.Join(segs, ",") +
		`],"value":{"orMatch":{"valueMatchers":[{"listMatch":{"oneOf":` + v + `}},` + v + `]}}}}`
}

const (
	anyString = `{"safeRegex":{"regex":".+"}}`
)

func exact(s string) string  { return `{"exact":"` + s + `"}` }
func prefix(s string) string { return `{"prefix":"` + s + `"}` }
func suffix(s string) string { return `{"suffix":"` + s + `"}` }
func regex(s string) string {
	return `{"safeRegex":{"regex":"` + strings.ReplaceAll(s, `\`, `\\`) + `"}}`
}

func TestSources(t *testing.T) {
	src := func(s *authzpb.Source) *authzpb.Rule {
		return &authzpb.Rule{From: []*authzpb.Rule_From{{Source: s}}}
	}
	runRuleCases(t, []ruleCase{
		{name: "principals", rule: src(&authzpb.Source{Principals: []string{"cluster.local/ns/a/sa/b", "pre*", "*suf.x", "*"}}),
			principals: list(or(authn(exact("spiffe://cluster.local/ns/a/sa/b")), authn(prefix("spiffe://pre")),
				authn(regex(`spiffe://.*suf\.x`)), authn(anyString)))},
		{name: "notPrincipals", rule: src(&authzpb.Source{NotPrincipals: []string{"cluster.local/ns/a/sa/b"}}),
			principals: list(not(or(authn(exact("spiffe://cluster.local/ns/a/sa/b")))))},
		{name: "principals and notPrincipals", rule: src(&authzpb.Source{Principals: []string{"*"}, NotPrincipals: []string{"cluster.local/ns/a/sa/b"}}),
			principals: list(or(authn(anyString)), not(or(authn(exact("spiffe://cluster.local/ns/a/sa/b")))))},
		{name: "requestPrincipals", rule: src(&authzpb.Source{RequestPrincipals: []string{
			"https://iss.example/sub", "*", "*/sub", "*example/sub", "https://iss.example/*", "https://iss.example/pre*", "iss*", "*sub", "plain",
		}}),
			principals: list(or(
				issSub(exact("https://iss.example"), exact("sub")),
				issSub(anyString, anyString),
				issSub(anyString, exact("sub")),
				issSub(suffix("example"), exact("sub")),
				issSub(exact("https://iss.example"), anyString),
				issSub(exact("https://iss.example"), prefix("pre")),
				issSub(prefix("iss"), anyString),
				issSub(anyString, suffix("sub")),
				issSub(exact("plain"), exact("")),
			))},
		{name: "one requestPrincipal needs no OR", rule: src(&authzpb.Source{RequestPrincipals: []string{"iss/sub"}}),
			principals: list(issSub(exact("iss"), exact("sub")))},
		{name: "notRequestPrincipals", rule: src(&authzpb.Source{NotRequestPrincipals: []string{"*"}}),
			principals: list(not(issSub(anyString, anyString)))},
		{name: "namespaces", rule: src(&authzpb.Source{Namespaces: []string{"ns", "team-*", "*"}, NotNamespaces: []string{"a.b"}}),
			principals: list(or(authn(regex(".*/ns/ns/.*")), authn(regex(".*/ns/team-.*/.*")), authn(regex(".*/ns/.*/.*"))),
				not(or(authn(regex(`.*/ns/a\.b/.*`)))))},
		{name: "serviceAccounts", rule: src(&authzpb.Source{ServiceAccounts: []string{"sa", "other/sa.x"}}),
			principals: list(or(authn(regex("spiffe://.+/ns/ns/(.+/|)sa/sa(/.+)?")), authn(regex(`spiffe://.+/ns/other/(.+/|)sa/sa\.x(/.+)?`))))},
		{name: "trustDomains", rule: src(&authzpb.Source{TrustDomains: []string{"td.example", "*", "td-*.example"}}),
			principals: list(or(authn(prefix("spiffe://td.example/")), authn(prefix("spiffe://")), authn(regex(`spiffe://td-[^/]*\.example/.*`))))},
		{name: "ipBlocks", rule: src(&authzpb.Source{IpBlocks: []string{"1.2.3.4", "10.1.2.3/8", "2001:db8::1", "2001:db8::/32"}, NotIpBlocks: []string{"10.0.0.1"}}),
			principals: list(or(`{"directRemoteIp":{"addressPrefix":"1.2.3.4","prefixLen":32}}`, `{"directRemoteIp":{"addressPrefix":"10.1.2.3","prefixLen":8}}`,
				`{"directRemoteIp":{"addressPrefix":"2001:db8::1","prefixLen":128}}`, `{"directRemoteIp":{"addressPrefix":"2001:db8::","prefixLen":32}}`),
				not(or(`{"directRemoteIp":{"addressPrefix":"10.0.0.1","prefixLen":32}}`)))},
		{name: "remoteIpBlocks", rule: src(&authzpb.Source{RemoteIpBlocks: []string{"1.2.3.4"}, NotRemoteIpBlocks: []string{"5.6.0.0/16"}}),
			principals: list(or(`{"remoteIp":{"addressPrefix":"1.2.3.4","prefixLen":32}}`), not(or(`{"remoteIp":{"addressPrefix":"5.6.0.0","prefixLen":16}}`)))},
		{name: "order: principals requestPrincipals serviceAccounts trustDomains namespaces remoteIpBlocks ipBlocks",
			rule: src(&authzpb.Source{IpBlocks: []string{"1.1.1.1"}, RemoteIpBlocks: []string{"2.2.2.2"}, Namespaces: []string{"n"},
				TrustDomains: []string{"t"}, ServiceAccounts: []string{"s"}, RequestPrincipals: []string{"i/s"}, Principals: []string{"p"}}),
			principals: list(or(authn(exact("spiffe://p"))), issSub(exact("i"), exact("s")), or(authn(regex("spiffe://.+/ns/ns/(.+/|)sa/s(/.+)?"))),
				or(authn(prefix("spiffe://t/"))), or(authn(regex(".*/ns/n/.*"))),
				or(`{"remoteIp":{"addressPrefix":"2.2.2.2","prefixLen":32}}`), or(`{"directRemoteIp":{"addressPrefix":"1.1.1.1","prefixLen":32}}`))},
		{name: "from without source", rule: &authzpb.Rule{From: []*authzpb.Rule_From{{}}}},
	}, authz.Options{})
}

func TestOperations(t *testing.T) {
	op := func(o *authzpb.Operation) *authzpb.Rule {
		return &authzpb.Rule{To: []*authzpb.Rule_To{{Operation: o}}}
	}
	hdr := func(name, m string) string { return `{"header":{"name":"` + name + `","stringMatch":` + m + `}}` }
	present := func(name string) string { return `{"header":{"name":"` + name + `","presentMatch":true}}` }
	path := func(m string) string { return `{"urlPath":{"path":` + m + `}}` }
	template := func(p string) string {
		return `{"uriTemplate":{"name":"uri-template","typedConfig":{"@type":"type.googleapis.com/envoy.extensions.path.match.uri_template.v3.UriTemplateMatchConfig","pathTemplate":"` + p + `"}}}`
	}
	runRuleCases(t, []ruleCase{
		{name: "hosts", rule: op(&authzpb.Operation{Hosts: []string{"Example.com", "*.example.com", "example.*", "*"}}),
			permissions: list(orP(hdr(":authority", `{"exact":"Example.com","ignoreCase":true}`), hdr(":authority", `{"suffix":".example.com","ignoreCase":true}`),
				hdr(":authority", `{"prefix":"example.","ignoreCase":true}`), present(":authority")))},
		{name: "notHosts", rule: op(&authzpb.Operation{NotHosts: []string{"a.example"}}),
			permissions: list(notP(orP(hdr(":authority", `{"exact":"a.example","ignoreCase":true}`))))},
		{name: "methods", rule: op(&authzpb.Operation{Methods: []string{"GET", "*"}, NotMethods: []string{"DEL*"}}),
			permissions: list(orP(hdr(":method", exact("GET")), present(":method")), notP(orP(hdr(":method", prefix("DEL")))))},
		{name: "paths", rule: op(&authzpb.Operation{Paths: []string{"/exact", "/prefix/*", "*/suffix", "*"}}),
			permissions: list(orP(path(exact("/exact")), path(prefix("/prefix/")), path(suffix("/suffix")), path(anyString)))},
		{name: "path templates", rule: op(&authzpb.Operation{Paths: []string{"/a/{*}/b", "/{**}/c", "/x/{**}"}, NotPaths: []string{"/{*}/admin"}}),
			permissions: list(orP(template("/a/*/b"), template("/**/c"), template("/x/**")), notP(orP(template("/*/admin"))))},
		{name: "ports", rule: op(&authzpb.Operation{Ports: []string{"80", "65535"}, NotPorts: []string{"0"}}),
			permissions: list(orP(`{"destinationPort":80}`, `{"destinationPort":65535}`), notP(orP(`{"destinationPort":0}`)))},
		{name: "order: hosts methods paths ports", rule: op(&authzpb.Operation{Ports: []string{"1"}, Paths: []string{"/p"}, Methods: []string{"M"}, Hosts: []string{"h"}}),
			permissions: list(orP(hdr(":authority", `{"exact":"h","ignoreCase":true}`)), orP(hdr(":method", exact("M"))), orP(path(exact("/p"))), orP(`{"destinationPort":1}`))},
		{name: "to without operation", rule: &authzpb.Rule{To: []*authzpb.Rule_To{{}}}},
	}, authz.Options{})
}

func TestConditions(t *testing.T) {
	when := func(key string, values, notValues []string) *authzpb.Rule {
		return &authzpb.Rule{When: []*authzpb.Condition{{Key: key, Values: values, NotValues: notValues}}}
	}
	v := func(vs ...string) []string { return vs }
	hdr := func(name, m string) string { return `{"header":{"name":"` + name + `","stringMatch":` + m + `}}` }
	runRuleCases(t, []ruleCase{
		{name: "request.headers", rule: when("request.headers[X-Foo]", v("a", "pre*", "*suf", "*"), v("no")),
			principals: list(or(hdr("X-Foo", exact("a")), hdr("X-Foo", prefix("pre")), hdr("X-Foo", suffix("suf")), `{"header":{"name":"X-Foo","presentMatch":true}}`),
				not(or(hdr("X-Foo", exact("no")))))},
		{name: "source.ip", rule: when("source.ip", v("10.0.0.0/8"), nil),
			principals: list(or(`{"directRemoteIp":{"addressPrefix":"10.0.0.0","prefixLen":8}}`))},
		{name: "remote.ip", rule: when("remote.ip", nil, v("1.2.3.4")),
			principals: list(not(or(`{"remoteIp":{"addressPrefix":"1.2.3.4","prefixLen":32}}`)))},
		{name: "source.namespace", rule: when("source.namespace", v("ns"), nil),
			principals: list(or(authn(regex(".*/ns/ns/.*"))))},
		{name: "source.principal", rule: when("source.principal", v("cluster.local/ns/a/sa/b"), nil),
			principals: list(or(authn(exact("spiffe://cluster.local/ns/a/sa/b"))))},
		{name: "source.serviceAccount", rule: when("source.serviceAccount", v("x/y"), nil),
			principals: list(or(authn(regex("spiffe://.+/ns/x/(.+/|)sa/y(/.+)?"))))},
		{name: "source.trustDomain", rule: when("source.trustDomain", v("cluster.local"), nil),
			principals: list(or(authn(prefix("spiffe://cluster.local/"))))},
		{name: "request.auth.principal", rule: when("request.auth.principal", v("iss/sub", "*"), v("bad/*")),
			principals: list(or(issSub(exact("iss"), exact("sub")), issSub(anyString, anyString)), not(issSub(exact("bad"), anyString)))},
		{name: "request.auth.audiences", rule: when("request.auth.audiences", v("a", "b*"), v("c")),
			principals: list(claimValues([]string{"aud"}, exact("a"), prefix("b")), not(claimValues([]string{"aud"}, exact("c"))))},
		{name: "request.auth.presenter", rule: when("request.auth.presenter", v("*"), nil),
			principals: list(claimValues([]string{"azp"}, anyString))},
		{name: "request.auth.claims", rule: when("request.auth.claims[groups]", v("admin", "*-ops"), nil),
			principals: list(claimValues([]string{"groups"}, exact("admin"), suffix("-ops")))},
		{name: "nested claims", rule: when("request.auth.claims[a][b.c]", v("x"), nil),
			principals: list(claimValues([]string{"a", "b.c"}, exact("x")))},
		{name: "claim with brackets", rule: when("request.auth.claims[a[b]]", v("x"), nil),
			principals: list(claimValues([]string{"a[b]"}, exact("x")))},
		{name: "destination.ip", rule: when("destination.ip", v("10.1.1.1"), v("::/0")),
			permissions: list(orP(`{"destinationIp":{"addressPrefix":"10.1.1.1","prefixLen":32}}`), notP(orP(`{"destinationIp":{"addressPrefix":"::","prefixLen":0}}`)))},
		{name: "destination.port", rule: when("destination.port", v("8080"), nil),
			permissions: list(orP(`{"destinationPort":8080}`))},
		{name: "connection.sni", rule: when("connection.sni", v("*.example.com", "a.example"), nil),
			permissions: list(orP(`{"requestedServerName":`+suffix(".example.com")+`}`, `{"requestedServerName":`+exact("a.example")+`}`))},
		{name: "experimental.envoy.filters", rule: when("experimental.envoy.filters.network.mysql_proxy[db.table]", v("[update]", "x*"), v("y")),
			permissions: list(
				`{"metadata":{"filter":"envoy.filters.network.mysql_proxy","path":[{"key":"db.table"}],"value":{"orMatch":{"valueMatchers":[{"listMatch":{"oneOf":{"stringMatch":{"exact":"update"}}}},{"stringMatch":{"prefix":"x"}}]}}}}`,
				notP(`{"metadata":{"filter":"envoy.filters.network.mysql_proxy","path":[{"key":"db.table"}],"value":{"stringMatch":{"exact":"y"}}}}`))},
		{name: "when after the source's own conditions, in every from",
			rule: &authzpb.Rule{
				From: []*authzpb.Rule_From{{Source: &authzpb.Source{Namespaces: []string{"a"}}}, {Source: &authzpb.Source{Namespaces: []string{"b"}}}},
				When: []*authzpb.Condition{{Key: "source.ip", Values: []string{"1.1.1.1"}}, {Key: "destination.port", Values: []string{"80"}}},
			},
			principals:  list(or(authn(regex(".*/ns/a/.*"))), or(`{"directRemoteIp":{"addressPrefix":"1.1.1.1","prefixLen":32}}`)),
			permissions: list(orP(`{"destinationPort":80}`))},
		{name: "empty condition", rule: when("source.ip", nil, nil)},
	}, authz.Options{})
}

// Each from and each to entry is one principal and one permission, ORed by
// Envoy.
func TestFromAndToEntries(t *testing.T) {
	r := &authzpb.Rule{
		From: []*authzpb.Rule_From{{Source: &authzpb.Source{Namespaces: []string{"a"}}}, {Source: &authzpb.Source{Namespaces: []string{"b"}}}},
		To:   []*authzpb.Rule_To{{Operation: &authzpb.Operation{Ports: []string{"1"}}}, {Operation: &authzpb.Operation{Ports: []string{"2"}}}},
	}
	p, _ := oneRule(t, authzpb.AuthorizationPolicy_ALLOW, r, false, authz.Options{})
	sameJSON(t, p, `{
		"principals":[{"andIds":{"ids":[`+or(authn(regex(".*/ns/a/.*")))+`]}},{"andIds":{"ids":[`+or(authn(regex(".*/ns/b/.*")))+`]}}],
		"permissions":[{"andRules":{"rules":[{"orRules":{"rules":[{"destinationPort":1}]}}]}},{"andRules":{"rules":[{"orRules":{"rules":[{"destinationPort":2}]}}]}}]}`)
}

func TestPeerPrincipalFromFilterState(t *testing.T) {
	r := &authzpb.Rule{From: []*authzpb.Rule_From{{Source: &authzpb.Source{Principals: []string{"cluster.local/ns/a/sa/b"}, Namespaces: []string{"n"}}}}}
	p, _ := oneRule(t, authzpb.AuthorizationPolicy_ALLOW, r, false, authz.Options{PeerPrincipalFromFilterState: true})
	fs := func(m string) string {
		return `{"filterState":{"key":"io.istio.peer_principal","stringMatch":` + m + `}}`
	}
	sameJSON(t, p.GetPrincipals()[0].GetAndIds(), `{"ids":`+list(or(fs(exact("spiffe://cluster.local/ns/a/sa/b"))), or(fs(regex(".*/ns/n/.*"))))+`}`)
}
