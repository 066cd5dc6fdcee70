package validation_test

import (
	"strings"
	"testing"

	security "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/validation"
)

// secCase is one table case for the security, telemetry and extension
// validators. A nil wantErr (wantWarn) means no error (warning) is expected;
// otherwise every substring must appear in the error (warning) text.
type secCase struct {
	name        string
	spec        config.Spec
	annotations map[string]string
	wantErr     []string
	wantWarn    []string
}

func secRun(t *testing.T, fn validation.ValidateFunc, cases []secCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := config.Config{
				Meta: config.Meta{Name: "foo", Namespace: "bar", Annotations: c.annotations},
				Spec: c.spec,
			}
			warn, err := fn(cfg)
			secExpect(t, "error", err, c.wantErr)
			secExpect(t, "warning", warn, c.wantWarn)
		})
	}
}

func secExpect(t *testing.T, kind string, got error, want []string) {
	t.Helper()
	if want == nil {
		if got != nil {
			t.Errorf("unexpected %s: %v", kind, got)
		}
		return
	}
	if got == nil {
		t.Errorf("expected %s containing %q, got none", kind, want)
		return
	}
	for _, w := range want {
		if !strings.Contains(got.Error(), w) {
			t.Errorf("%s %q does not contain %q", kind, got.Error(), w)
		}
	}
}

func apRule(from *security.Source, to *security.Operation) *security.Rule {
	r := &security.Rule{}
	if from != nil {
		r.From = []*security.Rule_From{{Source: from}}
	}
	if to != nil {
		r.To = []*security.Rule_To{{Operation: to}}
	}
	return r
}

func TestValidateAuthorizationPolicy(t *testing.T) {
	sel := &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "httpbin"}}
	gw := &typev1beta1.PolicyTargetReference{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: "gw"}
	cases := []secCase{
		{name: "valid allow", spec: &security.AuthorizationPolicy{
			Selector: sel,
			Rules: []*security.Rule{{
				From: []*security.Rule_From{{Source: &security.Source{
					Principals: []string{"cluster.local/ns/default/sa/sleep"}, IpBlocks: []string{"10.0.0.1", "10.1.0.0/16"},
				}}},
				To: []*security.Rule_To{{Operation: &security.Operation{
					Methods: []string{"GET"}, Paths: []string{"/info*", "/api/{*}/x"}, Ports: []string{"8080"},
				}}},
				When: []*security.Condition{{Key: "request.headers[x-token]", Values: []string{"abc"}}},
			}},
		}},
		{name: "allow nothing", spec: &security.AuthorizationPolicy{}},
		{name: "typed nil spec", spec: (*security.AuthorizationPolicy)(nil)},
		{name: "wrong type", spec: &security.PeerAuthentication{}, wantErr: []string{"cannot cast to AuthorizationPolicy"}},
		{name: "nil spec", spec: nil, wantErr: []string{"cannot cast to"}},
		{name: "custom without provider", spec: &security.AuthorizationPolicy{
			Action: security.AuthorizationPolicy_CUSTOM, Rules: []*security.Rule{{}},
		}, wantErr: []string{"spec.provider.name: invalid policy foo.bar: `provider.name` must not be empty"}},
		{name: "custom with provider", spec: &security.AuthorizationPolicy{
			Action:       security.AuthorizationPolicy_CUSTOM,
			ActionDetail: &security.AuthorizationPolicy_Provider{Provider: &security.AuthorizationPolicy_ExtensionProvider{Name: "ext"}},
			Rules:        []*security.Rule{{}},
		}},
		{name: "custom with principals", spec: &security.AuthorizationPolicy{
			Action:       security.AuthorizationPolicy_CUSTOM,
			ActionDetail: &security.AuthorizationPolicy_Provider{Provider: &security.AuthorizationPolicy_ExtensionProvider{Name: "ext"}},
			Rules: []*security.Rule{{
				From: []*security.Rule_From{{Source: &security.Source{Principals: []string{"a"}}}},
				When: []*security.Condition{{Key: "request.auth.claims[iss]", Values: []string{"x"}}},
			}},
		}, wantErr: []string{
			"spec.rules[0].from[0].source.principals: invalid policy foo.bar: From.Principals is currently not supported with CUSTOM action",
			"spec.rules[0].when[0].key: invalid policy foo.bar: request.auth.claims[iss] is currently not supported with CUSTOM action",
		}},
		{name: "provider with allow", spec: &security.AuthorizationPolicy{
			ActionDetail: &security.AuthorizationPolicy_Provider{Provider: &security.AuthorizationPolicy_ExtensionProvider{Name: "ext"}},
		}, wantErr: []string{"spec.provider: invalid policy foo.bar: `provider` must not be with non CUSTOM action, found ALLOW"}},
		{name: "deny without rules", spec: &security.AuthorizationPolicy{Action: security.AuthorizationPolicy_DENY},
			wantErr: []string{"spec.rules: invalid policy foo.bar: DENY action without `rules` is meaningless"}},
		{name: "deny empty rules list", spec: &security.AuthorizationPolicy{
			Action: security.AuthorizationPolicy_DENY, Rules: []*security.Rule{},
		}, wantErr: []string{"DENY action without `rules`"}},
		{name: "deny with only http attributes warns", spec: &security.AuthorizationPolicy{
			Action: security.AuthorizationPolicy_DENY,
			Rules:  []*security.Rule{apRule(nil, &security.Operation{Paths: []string{"/admin"}})},
		}, wantWarn: []string{"spec.rules[0]: configured AuthorizationPolicy will deny all traffic to TCP ports"}},
		{name: "deny with port does not warn", spec: &security.AuthorizationPolicy{
			Action: security.AuthorizationPolicy_DENY,
			Rules:  []*security.Rule{apRule(nil, &security.Operation{Paths: []string{"/admin"}, Ports: []string{"80"}})},
		}},
		{name: "audit without rules warns", spec: &security.AuthorizationPolicy{Action: security.AuthorizationPolicy_AUDIT},
			wantWarn: []string{"spec.rules: AUDIT action without `rules`"}},
		{name: "selector and targetRefs", spec: &security.AuthorizationPolicy{
			Selector: sel, TargetRefs: []*typev1beta1.PolicyTargetReference{gw},
		}, wantErr: []string{"spec.targetRefs: invalid policy foo.bar: only one of targetRefs or workloadSelector can be set"}},
		{name: "gatewayclass and service entry targets", spec: &security.AuthorizationPolicy{
			TargetRefs: []*typev1beta1.PolicyTargetReference{
				{Group: "gateway.networking.k8s.io", Kind: "GatewayClass", Name: "istio-waypoint"},
				{Group: "networking.istio.io", Kind: "ServiceEntry", Name: "se"},
				{Kind: "Service", Name: "svc"},
			},
		}},
		{name: "bad targetRef", spec: &security.AuthorizationPolicy{
			TargetRefs: []*typev1beta1.PolicyTargetReference{{Group: "apps", Kind: "Deployment", Namespace: "other"}},
		}, wantErr: []string{
			"spec.targetRefs[0].kind: invalid policy foo.bar: targetRef must be to one of",
			"spec.targetRefs[0].name: invalid policy foo.bar: targetRef name must be set",
			"spec.targetRefs[0].namespace: invalid policy foo.bar: targetRef namespace must not be set",
		}},
		{name: "selector with wildcard", spec: &security.AuthorizationPolicy{
			Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "*"}},
		}, wantErr: []string{"spec.selector.matchLabels[app]: invalid policy foo.bar: wildcard is not supported in selector"}},
		{name: "selector without labels warns", spec: &security.AuthorizationPolicy{Selector: &typev1beta1.WorkloadSelector{}},
			wantWarn: []string{"spec.selector: workload selector specified without labels"}},
	}
	secRun(t, validation.ValidateAuthorizationPolicy, cases)
}

func TestValidateAuthorizationPolicyRules(t *testing.T) {
	cases := []secCase{
		{name: "empty from source", spec: &security.AuthorizationPolicy{
			Rules: []*security.Rule{{From: []*security.Rule_From{{}}}},
		}, wantErr: []string{"spec.rules[0].from[0].source: invalid policy foo.bar: `from.source` must not be nil, found at rule 0"}},
		{name: "source without fields", spec: &security.AuthorizationPolicy{
			Rules: []*security.Rule{apRule(&security.Source{}, nil)},
		}, wantErr: []string{"spec.rules[0].from[0].source: invalid policy foo.bar: `from.source` must not be empty, found at rule 0"}},
		{name: "operation without fields", spec: &security.AuthorizationPolicy{
			Rules: []*security.Rule{apRule(nil, &security.Operation{})},
		}, wantErr: []string{"spec.rules[0].to[0].operation: invalid policy foo.bar: `to.operation` must not be empty, found at rule 0"}},
		{name: "explicit empty from and to", spec: &security.AuthorizationPolicy{
			Rules: []*security.Rule{{From: []*security.Rule_From{}, To: []*security.Rule_To{}}},
		}, wantErr: []string{"spec.rules[0].from: invalid policy foo.bar: `from` must not be empty, found at rule 0",
			"spec.rules[0].to: invalid policy foo.bar: `to` must not be empty, found at rule 0"}},
		{name: "null rule", spec: &security.AuthorizationPolicy{Rules: []*security.Rule{nil}},
			wantErr: []string{"spec.rules[0]: invalid policy foo.bar: `rule` must not be nil, found at rule 0"}},
		{name: "service accounts with namespaces", spec: &security.AuthorizationPolicy{
			Rules: []*security.Rule{apRule(&security.Source{
				Namespaces: []string{"ns"}, ServiceAccounts: []string{"ns/sa", "a/b/c", "*"},
			}, nil)},
		}, wantErr: []string{
			"spec.rules[0].from[0].source: invalid policy foo.bar: cannot set serviceAccounts with namespaces or principals, found at rule 0",
			"spec.rules[0].from[0].source.serviceAccounts[1]: invalid policy foo.bar: expected format 'serviceAccount' or 'namespace/serviceAccount', found \"a/b/c\" in ServiceAccounts",
		}},
		{name: "condition problems", spec: &security.AuthorizationPolicy{
			Rules: []*security.Rule{{When: []*security.Condition{
				{Values: []string{"x"}},
				{Key: "source.ip"},
				{Key: "foo.bar", Values: []string{"x"}},
				{Key: "destination.port", Values: []string{"80"}, NotValues: []string{"99999"}},
				{Key: "request.headers", Values: []string{"x"}},
				{Key: "destination.namespace", Values: []string{"x"}},
				nil,
			}}},
		}, wantErr: []string{
			"spec.rules[0].when[0].key: invalid policy foo.bar: `key` must not be empty",
			"spec.rules[0].when[1]: invalid policy foo.bar: at least one of `values` or `notValues` must be set for key source.ip",
			"spec.rules[0].when[2].key: invalid policy foo.bar: invalid `value` for `key` foo.bar: unknown attribute: foo.bar",
			"spec.rules[0].when[3].notValues[0]: invalid policy foo.bar: invalid `notValue` for `key` destination.port: bad port (99999): <nil>",
			"spec.rules[0].when[4].key: invalid policy foo.bar: invalid `value` for `key` request.headers: bad key (request.headers): should have format a[b]",
			"spec.rules[0].when[5].key: invalid policy foo.bar: invalid `value` for `key` destination.namespace: attribute destination.namespace is replaced by the metadata.namespace",
			"spec.rules[0].when[6].key: invalid policy foo.bar: `key` must not be empty",
		}},
		{name: "known condition keys", spec: &security.AuthorizationPolicy{
			Rules: []*security.Rule{{When: []*security.Condition{
				{Key: "source.ip", Values: []string{"10.0.0.0/8"}},
				{Key: "remote.ip", NotValues: []string{"1.2.3.4"}},
				{Key: "source.namespace", Values: []string{"ns"}},
				{Key: "source.principal", Values: []string{"cluster.local/ns/a/sa/b"}},
				{Key: "request.auth.principal", Values: []string{"iss/sub"}},
				{Key: "request.auth.audiences", Values: []string{"aud"}},
				{Key: "request.auth.presenter", Values: []string{"p"}},
				{Key: "request.auth.claims[groups]", Values: []string{"admin"}},
				{Key: "destination.ip", Values: []string{"::1"}},
				{Key: "destination.port", Values: []string{"443"}},
				{Key: "connection.sni", Values: []string{"example.com"}},
				{Key: "experimental.envoy.filters.network.mysql_proxy[db.table]", Values: []string{"[update]"}},
			}}},
		}},
		{name: "dry-run with custom action", annotations: map[string]string{"istio.io/dry-run": "true"},
			spec: &security.AuthorizationPolicy{
				Action:       security.AuthorizationPolicy_CUSTOM,
				ActionDetail: &security.AuthorizationPolicy_Provider{Provider: &security.AuthorizationPolicy_ExtensionProvider{Name: "e"}},
				Rules:        []*security.Rule{{}},
			}, wantErr: []string{"metadata.annotations[istio.io/dry-run]: the annotation istio.io/dry-run currently only supports action ALLOW/DENY"}},
		{name: "dry-run not a bool", annotations: map[string]string{"istio.io/dry-run": "maybe"},
			spec:    &security.AuthorizationPolicy{},
			wantErr: []string{"metadata.annotations[istio.io/dry-run]: bar/foo has annotation istio.io/dry-run with invalid value (maybe): strconv.ParseBool: parsing \"maybe\": invalid syntax"}},
		{name: "unsupported path template", spec: &security.AuthorizationPolicy{
			Rules: []*security.Rule{apRule(nil, &security.Operation{Paths: []string{"/{**}/{*}", "/a/{name}", "/{**}/tail"}})},
		}, wantErr: []string{
			"spec.rules[0].to[0].operation.paths[0]: invalid policy foo.bar: invalid or unsupported path {**}/{*}, found in Paths. {**} is not the last operator",
		}},
	}
	secRun(t, validation.ValidateAuthorizationPolicy, cases)
}

// TestAuthorizationPolicyReportsAllProblems checks that one object with many
// problems reports every one of them at once, each at its own path.
func TestAuthorizationPolicyReportsAllProblems(t *testing.T) {
	spec := &security.AuthorizationPolicy{
		Action:     security.AuthorizationPolicy_CUSTOM,
		Selector:   &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "a"}},
		TargetRefs: []*typev1beta1.PolicyTargetReference{{Kind: "Service", Name: "svc"}},
		Rules: []*security.Rule{{
			From: []*security.Rule_From{{Source: &security.Source{
				IpBlocks:       []string{"10.0.0.1", "not-an-ip"},
				RemoteIpBlocks: []string{"10.0.0.0/33"},
			}}},
			To: []*security.Rule_To{{Operation: &security.Operation{
				Ports: []string{"0", "http"}, Hosts: []string{""},
			}}},
			When: []*security.Condition{{Key: "source.ip", Values: []string{"bad"}}},
		}},
	}
	_, err := validation.ValidateAuthorizationPolicy(config.Config{
		Meta: config.Meta{Name: "foo", Namespace: "bar"}, Spec: spec,
	})
	want := []string{
		"spec.provider.name: invalid policy foo.bar: `provider.name` must not be empty",
		"spec.targetRefs: invalid policy foo.bar: only one of targetRefs or workloadSelector can be set",
		"spec.rules[0].from[0].source.ipBlocks[1]: invalid policy foo.bar: bad IP address (not-an-ip)",
		"spec.rules[0].from[0].source.remoteIpBlocks[0]: invalid policy foo.bar: bad CIDR range (10.0.0.0/33): netip.ParsePrefix(\"10.0.0.0/33\"): prefix length out of range",
		// port 0 is a port, as Istio sees it
		"spec.rules[0].to[0].operation.ports[1]: invalid policy foo.bar: bad port (http): strconv.ParseUint: parsing \"http\": invalid syntax",
		"spec.rules[0].to[0].operation.hosts[0]: invalid policy foo.bar: empty value not allowed, found in Hosts",
		"spec.rules[0].when[0].values[0]: invalid policy foo.bar: invalid `value` for `key` source.ip: bad IP address (bad)",
	}
	secExpect(t, "error", err, want)
	if got := len(validation.Problems(err)); got != len(want) {
		t.Errorf("expected %d problems, got %d: %v", len(want), got, err)
	}
}
