package ambient_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	istiometa "istio.io/api/meta/v1alpha1"
	securityapi "istio.io/api/security/v1beta1"
	typeapi "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/ambient"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/tests/golden"
	"github.com/meshplane/istiod/tests/refdata"
)

// referencePolicyMesh is the reference ambient mesh with the policies at
// generation 1 (the API server's; the reference leaves it out).
func referencePolicyMesh(t *testing.T) *mesh {
	t.Helper()
	objs := referenceObjects(t)
	for i, o := range objs {
		if c, ok := o.(config.Config); ok && c.GroupVersionKind == gvk.AuthorizationPolicy {
			c.Generation = 1
			objs[i] = c
		}
	}
	return newMesh(objs)
}

func policyStatus(x krt.Collection[ambient.PolicyStatus], ns, name string) *istiometa.IstioStatus {
	if s := x.GetKey(ns + "/" + name); s != nil {
		return s.Status
	}
	return nil
}

// condition is the condition of type t, nil when absent.
func condition(st *istiometa.IstioStatus, t string) *istiometa.IstioCondition {
	for _, c := range st.GetConditions() {
		if c.Type == t {
			return c
		}
	}
	return nil
}

func statusJSON(t *testing.T, st *istiometa.IstioStatus) any {
	t.Helper()
	b, err := protojson.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return dropTimes(out)
}

func dropTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if k != "lastTransitionTime" {
				out[k] = dropTimes(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = dropTimes(e)
		}
		return out
	}
	return v
}

// TestReferencePolicyStatus computes the status of the reference's
// AuthorizationPolicies and compares it with what Istio wrote
// (real/authorizationpolicies.json), field by field (lastTransitionTime
// aside): ZtunnelAccepted for flights-l4, which ztunnel enforces;
// WaypointAccepted for booking-get-only, bound through the booking Service
// to travel/booking-waypoint.
func TestReferencePolicyStatus(t *testing.T) {
	x := referencePolicyMesh(t).index(t)
	statuses := x.PolicyStatuses()
	eventually(t, "policy statuses synced", statuses.HasSynced)
	b, err := os.ReadFile(filepath.Join(refdata.Dir(t, "ambient"), "real", "authorizationpolicies.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Items []map[string]any }
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("the reference has %d policies, want 2", len(list.Items))
	}
	for _, o := range list.Items {
		meta := o["metadata"].(map[string]any)
		ns, name := meta["namespace"].(string), meta["name"].(string)
		got := policyStatus(statuses, ns, name)
		if got == nil {
			t.Errorf("%s/%s: no status", ns, name)
			continue
		}
		if d := golden.Diff("status", statusJSON(t, got), dropTimes(o["status"])); len(d) > 0 {
			t.Errorf("%s/%s: status differs from Istio's:\n%s", ns, name, strings.Join(d, "\n"))
		}
	}
}

func authzPolicy(name string, gen int64, spec *securityapi.AuthorizationPolicy) config.Config {
	return config.Config{Meta: config.Meta{GroupVersionKind: gvk.AuthorizationPolicy, Namespace: "travel", Name: name,
		Generation: gen}, Spec: spec}
}

func serviceRef(name string) *typeapi.PolicyTargetReference {
	return &typeapi.PolicyTargetReference{Kind: "Service", Name: name}
}

// TestPolicyStatusConditions checks Istio's reasons and messages for what
// is wrong: a targetRef to a missing Service, to a Service without a
// waypoint, to several targets of which some bind, a GatewayClass from
// outside the root namespace, a missing waypoint Gateway; an action
// ztunnel lacks, HTTP rules ztunnel drops.
func TestPolicyStatusConditions(t *testing.T) {
	m := referencePolicyMesh(t)
	cases := []struct {
		name   string
		spec   *securityapi.AuthorizationPolicy
		typ    string
		status string
		reason string
		msg    string
	}{
		{"missing-service", &securityapi.AuthorizationPolicy{TargetRefs: []*typeapi.PolicyTargetReference{serviceRef("nope")}},
			"WaypointAccepted", "False", "TargetNotFound", "Service travel/nope was not found"},
		{"no-waypoint", &securityapi.AuthorizationPolicy{TargetRefs: []*typeapi.PolicyTargetReference{serviceRef("flights")}},
			"WaypointAccepted", "False", "AncestorNotBound", "Service travel/flights is not bound to a waypoint"},
		{"partial", &securityapi.AuthorizationPolicy{TargetRefs: []*typeapi.PolicyTargetReference{serviceRef("booking"), serviceRef("nope")}},
			"WaypointAccepted", "True", "PartiallyInvalid", "Invalid targetRefs: Service.core:travel/nope"},
		{"none-bound", &securityapi.AuthorizationPolicy{TargetRefs: []*typeapi.PolicyTargetReference{serviceRef("flights"), serviceRef("nope")}},
			"WaypointAccepted", "False", "Invalid", "Invalid targetRefs: Service.core:travel/flights, Service.core:travel/nope"},
		{"class-outside-root", &securityapi.AuthorizationPolicy{TargetRefs: []*typeapi.PolicyTargetReference{
			{Group: "gateway.networking.k8s.io", Kind: "GatewayClass", Name: "istio-waypoint"}}},
			"WaypointAccepted", "False", "Invalid", "AuthorizationPolicy must be in the root namespace `istio-system` when referencing a GatewayClass"},
		{"gateway", &securityapi.AuthorizationPolicy{TargetRefs: []*typeapi.PolicyTargetReference{
			{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: "booking-waypoint"}}},
			"WaypointAccepted", "True", "Accepted", "bound to travel/booking-waypoint"},
		{"missing-gateway", &securityapi.AuthorizationPolicy{TargetRef: &typeapi.PolicyTargetReference{
			Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: "nope"}},
			"WaypointAccepted", "False", "TargetNotFound", "not bound"},
		{"custom", &securityapi.AuthorizationPolicy{Action: securityapi.AuthorizationPolicy_CUSTOM},
			"ZtunnelAccepted", "False", "UnsupportedValue", "ztunnel does not support the CUSTOM action"},
		{"http", &securityapi.AuthorizationPolicy{Rules: []*securityapi.Rule{{To: []*securityapi.Rule_To{{
			Operation: &securityapi.Operation{Methods: []string{"GET"}}}}}}},
			"ZtunnelAccepted", "True", "UnsupportedValue", "ztunnel does not support HTTP attributes (found: methods). " +
				"In ambient mode you must use a waypoint proxy to enforce HTTP rules. Within an ALLOW policy, rules matching " +
				"HTTP attributes are omitted. This will be more restrictive than requested."},
	}
	for _, tc := range cases {
		m.set(authzPolicy(tc.name, 3, tc.spec))
	}
	x := m.index(t)
	statuses := x.PolicyStatuses()
	eventually(t, "policy statuses synced", statuses.HasSynced)
	for _, tc := range cases {
		st := policyStatus(statuses, "travel", tc.name)
		if len(st.GetConditions()) != 1 {
			t.Errorf("%s: conditions %v, want one", tc.name, st.GetConditions())
			continue
		}
		c := st.Conditions[0]
		if c.Type != tc.typ || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.msg || c.ObservedGeneration != 3 {
			t.Errorf("%s: condition %v,\nwant %s %s %s %q (generation 3)", tc.name, c, tc.typ, tc.status, tc.reason, tc.msg)
		}
	}
}

// TestPolicyStatusMerge: a condition that still holds keeps its
// lastTransitionTime (so nothing is rewritten), another controller's
// conditions are kept, and a condition that no longer applies goes (a
// policy moved from a selector to targetRefs loses ZtunnelAccepted).
func TestPolicyStatusMerge(t *testing.T) {
	m := referencePolicyMesh(t)
	x := m.index(t)
	statuses := x.PolicyStatuses()
	eventually(t, "policy statuses synced", statuses.HasSynced)
	first := policyStatus(statuses, "travel", "flights-l4")
	if c := condition(first, "ZtunnelAccepted"); c == nil || c.LastTransitionTime != nil {
		t.Fatalf("new condition %v: want one without lastTransitionTime (the writer stamps it)", c)
	}

	// as written: stamped, with another controller's condition beside it
	written := proto.Clone(first).(*istiometa.IstioStatus)
	stamp := timestamppb.Now()
	written.Conditions[0].LastTransitionTime = stamp
	written.Conditions = append(written.Conditions, &istiometa.IstioCondition{Type: "Reconciled", Status: "True"})
	var cfg config.Config
	for _, c := range m.configs[gvk.AuthorizationPolicy].List() {
		if c.Name == "flights-l4" {
			cfg = c
		}
	}
	cfg.Status = written
	m.set(cfg)
	eventually(t, "the written status read back", func() bool {
		return proto.Equal(policyStatus(statuses, "travel", "flights-l4"), written)
	})

	// the policy now targets the booking Service: ZtunnelAccepted goes
	spec := proto.Clone(cfg.Spec.(*securityapi.AuthorizationPolicy)).(*securityapi.AuthorizationPolicy)
	spec.Selector = nil
	spec.TargetRefs = []*typeapi.PolicyTargetReference{serviceRef("booking")}
	cfg.Spec, cfg.Generation = spec, 2
	m.set(cfg)
	eventually(t, "ZtunnelAccepted removed", func() bool {
		st := policyStatus(statuses, "travel", "flights-l4")
		return condition(st, "ZtunnelAccepted") == nil && condition(st, "WaypointAccepted") != nil
	})
	st := policyStatus(statuses, "travel", "flights-l4")
	if c := condition(st, "Reconciled"); c == nil {
		t.Errorf("another controller's condition dropped: %v", st)
	}
	if c := condition(st, "WaypointAccepted"); c.Message != "bound to travel/booking-waypoint" || c.ObservedGeneration != 2 {
		t.Errorf("WaypointAccepted %v", c)
	}
}

// A policy whose targetRef binds no waypoint is listed on warningz until
// it is fixed; one that applies is not.
func TestPolicyProblemsOnWarningz(t *testing.T) {
	m := referencePolicyMesh(t)
	bad := authzPolicy("bad-ref", 1, &securityapi.AuthorizationPolicy{TargetRefs: []*typeapi.PolicyTargetReference{serviceRef("nope")}})
	m.set(bad)
	x := m.index(t)
	statuses := x.PolicyStatuses()
	board := diag.New(nil)
	ambient.ReportPolicyProblems(statuses, board)
	eventually(t, "policy statuses synced", statuses.HasSynced)
	list := func() []string {
		var out []string
		for _, p := range board.List() {
			out = append(out, p.Object+" "+p.Field+" "+p.Message)
		}
		return out
	}
	want := "AuthorizationPolicy travel/bad-ref status.conditions[WaypointAccepted] WaypointAccepted=False TargetNotFound: " +
		"Service travel/nope was not found"
	eventually(t, "the problem listed", func() bool { return strings.Join(list(), "\n") == want })

	bad.Spec = &securityapi.AuthorizationPolicy{TargetRefs: []*typeapi.PolicyTargetReference{serviceRef("booking")}}
	bad.Generation = 2
	m.set(bad)
	eventually(t, "the problem gone", func() bool { return len(list()) == 0 })
}
