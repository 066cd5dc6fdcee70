package authz_test

import (
	"encoding/json"
	"reflect"
	"testing"

	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbachttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	rbactcp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	authzpb "istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/security/authz"
	"github.com/meshplane/istiod/pkg/config"
)

func policyConfig(ns, name string, spec *authzpb.AuthorizationPolicy) config.Config {
	return config.Config{
		Meta: config.Meta{
			GroupVersionKind: config.GroupVersionKind{Group: "security.istio.io", Version: "v1", Kind: "AuthorizationPolicy"},
			Namespace:        ns, Name: name,
		},
		Spec: spec,
	}
}

func unpack[M proto.Message](t *testing.T, a *anypb.Any, m M) M {
	t.Helper()
	if err := a.UnmarshalTo(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// httpRBAC unpacks an HTTP RBAC filter.
func httpRBAC(t *testing.T, f interface{ GetTypedConfig() *anypb.Any }) *rbachttp.RBAC {
	t.Helper()
	return unpack(t, f.GetTypedConfig(), &rbachttp.RBAC{})
}

func tcpRBAC(t *testing.T, f interface{ GetTypedConfig() *anypb.Any }) *rbactcp.RBAC {
	t.Helper()
	return unpack(t, f.GetTypedConfig(), &rbactcp.RBAC{})
}

// oneRule builds the RBAC policy of rule 0 of a policy ns/p with one rule,
// for HTTP or TCP; nil when the rule is left out. It also returns the
// warnings.
func oneRule(t *testing.T, action authzpb.AuthorizationPolicy_Action, r *authzpb.Rule, tcp bool, opts authz.Options) (*rbacpb.Policy, []authz.Warning) {
	t.Helper()
	cfgs := []config.Config{policyConfig("ns", "p", &authzpb.AuthorizationPolicy{Action: action, Rules: []*authzpb.Rule{r}})}
	var rules *rbacpb.RBAC
	var ws []authz.Warning
	if tcp {
		f := authz.BuildTCP(cfgs, opts)
		if len(f.Local) != 1 {
			t.Fatalf("want 1 TCP filter, got %d", len(f.Local))
		}
		rules, ws = tcpRBAC(t, f.Local[0]).GetRules(), f.Warnings
	} else {
		f := authz.BuildHTTP(cfgs, opts)
		if len(f.Local) != 1 {
			t.Fatalf("want 1 HTTP filter, got %d", len(f.Local))
		}
		rules, ws = httpRBAC(t, f.Local[0]).GetRules(), f.Warnings
	}
	return rules.GetPolicies()["ns[ns]-policy[p]-rule[0]"], ws
}

// sameJSON compares a message with the expected protojson.
func sameJSON(t *testing.T, m proto.Message, want string) {
	t.Helper()
	got, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got  %s\nwant %s", compact(g), compact(w))
	}
}
