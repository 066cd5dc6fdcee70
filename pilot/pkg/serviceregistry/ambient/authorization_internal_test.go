package ambient

import (
	"net/netip"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	securityapi "istio.io/api/security/v1beta1"
	typeapi "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/workloadapi/security"
)

func TestConvertAuthorizationPolicy(t *testing.T) {
	exact := func(s string) *security.StringMatch {
		return &security.StringMatch{MatchType: &security.StringMatch_Exact{Exact: s}}
	}
	addr := func(s string, l uint32) *security.Address {
		return &security.Address{Address: netip.MustParsePrefix(s).Addr().AsSlice(), Length: l}
	}
	cases := []struct {
		name    string
		ns      string
		ann     map[string]string
		spec    *securityapi.AuthorizationPolicy
		want    *security.Authorization
		wantMsg bool
	}{{
		name: "namespace-wide deny with sources and conditions",
		ns:   "travel",
		spec: &securityapi.AuthorizationPolicy{Action: securityapi.AuthorizationPolicy_DENY,
			Rules: []*securityapi.Rule{{
				From: []*securityapi.Rule_From{{Source: &securityapi.Source{
					Namespaces: []string{"prod*"}, ServiceAccounts: []string{"sa", "other/sb"},
					NotIpBlocks: []string{"10.0.0.0/8"}}}},
				When: []*securityapi.Condition{{Key: "destination.port", Values: []string{"80", "bad"}}},
			}}},
		want: &security.Authorization{Name: "p", Namespace: "travel", Scope: security.Scope_NAMESPACE,
			Action: security.Action_DENY, Groups: []*security.Group{{Rules: []*security.Rules{
				{Matches: []*security.Match{{
					Namespaces:      []*security.StringMatch{{MatchType: &security.StringMatch_Prefix{Prefix: "prod"}}},
					ServiceAccounts: []*security.ServiceAccountMatch{{Namespace: "travel", ServiceAccount: "sa"}, {Namespace: "other", ServiceAccount: "sb"}},
					NotSourceIps:    []*security.Address{addr("10.0.0.0/8", 8)}}}},
				{Matches: []*security.Match{{DestinationPorts: []uint32{80}}}},
			}}}},
	}, {
		name: "root namespace is global",
		ns:   "istio-system",
		spec: &securityapi.AuthorizationPolicy{Rules: []*securityapi.Rule{{From: []*securityapi.Rule_From{{
			Source: &securityapi.Source{Principals: []string{"a"}}}}}}},
		want: &security.Authorization{Name: "p", Namespace: "istio-system", Scope: security.Scope_GLOBAL,
			Groups: []*security.Group{{Rules: []*security.Rules{{Matches: []*security.Match{{
				Principals: []*security.StringMatch{exact("a")}}}}}}}},
	}, {
		name: "deny with HTTP attributes keeps the L4 part",
		ns:   "travel",
		spec: &securityapi.AuthorizationPolicy{Action: securityapi.AuthorizationPolicy_DENY,
			Selector: &typeapi.WorkloadSelector{MatchLabels: map[string]string{"app": "a"}},
			Rules: []*securityapi.Rule{{To: []*securityapi.Rule_To{{Operation: &securityapi.Operation{
				Methods: []string{"GET"}, Ports: []string{"80"}}}}}}},
		want: &security.Authorization{Name: "p", Namespace: "travel", Scope: security.Scope_WORKLOAD_SELECTOR,
			Action: security.Action_DENY, Groups: []*security.Group{{Rules: []*security.Rules{{
				Matches: []*security.Match{{DestinationPorts: []uint32{80}}}}}}}},
		wantMsg: true,
	}, {
		name:    "audit is not for ztunnel",
		ns:      "travel",
		spec:    &securityapi.AuthorizationPolicy{Action: securityapi.AuthorizationPolicy_AUDIT},
		wantMsg: true,
	}, {
		name:    "dry run is not for ztunnel",
		ns:      "travel",
		ann:     map[string]string{"istio.io/dry-run": "true"},
		spec:    &securityapi.AuthorizationPolicy{},
		wantMsg: true,
	}, {
		name: "targetRefs go to waypoints",
		ns:   "travel",
		spec: &securityapi.AuthorizationPolicy{TargetRefs: []*typeapi.PolicyTargetReference{{Kind: "Service", Name: "s"}}},
	}, {
		name: "empty rule is an empty group",
		ns:   "travel",
		spec: &securityapi.AuthorizationPolicy{Rules: []*securityapi.Rule{{}}},
		want: &security.Authorization{Name: "p", Namespace: "travel", Scope: security.Scope_NAMESPACE,
			Groups: []*security.Group{{}}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := config.Config{Meta: config.Meta{Name: "p", Namespace: c.ns, Annotations: c.ann}, Spec: c.spec}
			got, msg := convertAuthorizationPolicy("istio-system", cfg, c.spec)
			if !proto.Equal(got, c.want) {
				t.Errorf("got\n%s\nwant\n%s", prototext.Format(got), prototext.Format(c.want))
			}
			if (msg != "") != c.wantMsg {
				t.Errorf("message %q, want one: %v", msg, c.wantMsg)
			}
		})
	}
}

func TestConvertedPeerAuthentications(t *testing.T) {
	pa := func(ns string, sel map[string]string, mode securityapi.PeerAuthentication_MutualTLS_Mode,
		ports map[uint32]securityapi.PeerAuthentication_MutualTLS_Mode,
	) config.Config {
		s := &securityapi.PeerAuthentication{Mtls: &securityapi.PeerAuthentication_MutualTLS{Mode: mode}}
		if sel != nil {
			s.Selector = &typeapi.WorkloadSelector{MatchLabels: sel}
		}
		if ports != nil {
			s.PortLevelMtls = map[uint32]*securityapi.PeerAuthentication_MutualTLS{}
			for p, m := range ports {
				s.PortLevelMtls[p] = &securityapi.PeerAuthentication_MutualTLS{Mode: m}
			}
		}
		return config.Config{Meta: config.Meta{Name: "pa", Namespace: ns}, Spec: s}
	}
	const (
		strict     = securityapi.PeerAuthentication_MutualTLS_STRICT
		permissive = securityapi.PeerAuthentication_MutualTLS_PERMISSIVE
		unset      = securityapi.PeerAuthentication_MutualTLS_UNSET
	)
	app := map[string]string{"app": "a"}
	cases := []struct {
		name string
		in   []config.Config
		want []string
	}{
		{"mesh strict", []config.Config{pa("istio-system", nil, strict, nil)}, []string{"istio-system/" + staticStrictPolicy}},
		{"namespace permissive overrides mesh", []config.Config{pa("istio-system", nil, strict, nil), pa("ns", nil, permissive, nil)}, nil},
		{"namespace unset inherits", []config.Config{pa("istio-system", nil, strict, nil), pa("ns", nil, unset, nil)}, []string{"istio-system/" + staticStrictPolicy}},
		{"workload strict", []config.Config{pa("ns", app, strict, nil)}, []string{"istio-system/" + staticStrictPolicy}},
		{"permissive port under strict", []config.Config{pa("ns", nil, strict, nil), pa("ns", app, unset, map[uint32]securityapi.PeerAuthentication_MutualTLS_Mode{80: permissive})},
			[]string{"ns/converted_peer_authentication_pa"}},
		{"strict port under permissive", []config.Config{pa("ns", app, permissive, map[uint32]securityapi.PeerAuthentication_MutualTLS_Mode{80: strict})},
			[]string{"ns/converted_peer_authentication_pa"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := convertedPeerAuthentications("istio-system", c.in)
			if len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
