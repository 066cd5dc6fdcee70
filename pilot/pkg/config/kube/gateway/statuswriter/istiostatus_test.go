package statuswriter_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	istiometa "istio.io/api/meta/v1alpha1"
	securityapi "istio.io/api/security/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway/statuswriter"
	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// An Istio status (the ambient index's AuthorizationPolicy conditions) is
// written once with new conditions stamped by the writer's clock, compared
// as a proto, and not written again when it equals the object's.
func TestWritesIstioStatus(t *testing.T) {
	store := &countingStore{Store: memory.New(collections.Pilot)}
	stamped := timestamppb.New(now.Add(-time.Hour))
	written := &istiometa.IstioStatus{Conditions: []*istiometa.IstioCondition{{Type: "ZtunnelAccepted", Status: "True",
		Reason: "Accepted", Message: "attached to ztunnel", ObservedGeneration: 1, LastTransitionTime: stamped}}}
	pol := config.Config{Meta: config.Meta{GroupVersionKind: gvk.AuthorizationPolicy, Name: "p", Namespace: "travel", Generation: 1},
		Spec: &securityapi.AuthorizationPolicy{}, Status: proto.Clone(written)}
	if _, err := store.Create(pol); err != nil {
		t.Fatal(err)
	}
	desired := krt.NewStaticCollection[gateway.ObjectStatus]([]gateway.ObjectStatus{{Kind: gvk.AuthorizationPolicy,
		Namespace: "travel", Name: "p", Generation: 1, Status: proto.Clone(written)}})
	w := statuswriter.New(statuswriter.Options{Store: store, Statuses: desired, Now: func() time.Time { return now }})
	term := make(chan struct{})
	done := make(chan struct{})
	go func() { w.Run(term); close(done) }()
	defer func() { close(term); <-done }()

	time.Sleep(200 * time.Millisecond)
	if n := store.writes.Load(); n != 0 {
		t.Fatalf("%d writes of a status equal to the object's", n)
	}

	next := proto.Clone(written).(*istiometa.IstioStatus)
	next.Conditions = append(next.Conditions, &istiometa.IstioCondition{Type: "WaypointAccepted", Status: "False",
		Reason: "TargetNotFound", Message: "Service travel/nope was not found", ObservedGeneration: 1})
	desired.Set(gateway.ObjectStatus{Kind: gvk.AuthorizationPolicy, Namespace: "travel", Name: "p", Generation: 1, Status: next})
	eventually(t, "the new condition written", func() bool {
		st, _ := store.Get(gvk.AuthorizationPolicy, "p", "travel").Status.(*istiometa.IstioStatus)
		return len(st.GetConditions()) == 2
	})
	st := store.Get(gvk.AuthorizationPolicy, "p", "travel").Status.(*istiometa.IstioStatus)
	if !proto.Equal(st.Conditions[0].LastTransitionTime, stamped) {
		t.Errorf("kept condition restamped: %v", st.Conditions[0].LastTransitionTime)
	}
	if !st.Conditions[1].LastTransitionTime.AsTime().Equal(now) {
		t.Errorf("new condition stamped %v, want %v", st.Conditions[1].LastTransitionTime, now)
	}
	if n := store.writes.Load(); n != 1 {
		t.Errorf("%d writes, want 1", n)
	}
	if next.Conditions[1].LastTransitionTime != nil {
		t.Error("Stamp modified the desired status")
	}
}

func TestEqualIstioStatus(t *testing.T) {
	a := &istiometa.IstioStatus{Conditions: []*istiometa.IstioCondition{{Type: "ZtunnelAccepted", Status: "True"}}}
	b := proto.Clone(a).(*istiometa.IstioStatus)
	_, _ = proto.Marshal(b) // internal caches must not matter
	if !statuswriter.Equal(a, b) {
		t.Error("equal statuses differ")
	}
	if !statuswriter.Equal(&istiometa.IstioStatus{}, nil) {
		t.Error("empty and nil differ")
	}
	b.Conditions[0].Status = "False"
	if statuswriter.Equal(a, b) {
		t.Error("different statuses equal")
	}
	st := statuswriter.Stamp(a, metav1.NewTime(now)).(*istiometa.IstioStatus)
	if !st.Conditions[0].LastTransitionTime.AsTime().Equal(now) || a.Conditions[0].LastTransitionTime != nil {
		t.Errorf("Stamp: %v (input %v)", st, a)
	}
}

// In ambient mode the writer also creates the istio-waypoint class, of the
// mesh controller, with Istio's description.
func TestCreatesWaypointClassInAmbientMode(t *testing.T) {
	store := &countingStore{Store: memory.New(collections.GatewayAPI)}
	empty := krt.NewStaticCollection[gateway.ObjectStatus](nil)
	w := statuswriter.New(statuswriter.Options{Store: store, Statuses: empty, Classes: store.Collection(gvk.GatewayClass),
		CreateClasses: true, Ambient: true, Now: func() time.Time { return now }})
	term := make(chan struct{})
	done := make(chan struct{})
	go func() { w.Run(term); close(done) }()
	defer func() { close(term); <-done }()
	eventually(t, "istio-waypoint created", func() bool { return store.Get(gvk.GatewayClass, "istio-waypoint", "") != nil })
	spec := store.Get(gvk.GatewayClass, "istio-waypoint", "").Spec.(*gatewayv1.GatewayClassSpec)
	if spec.ControllerName != "istio.io/mesh-controller" || spec.Description == nil ||
		*spec.Description != "The default Istio waypoint GatewayClass" {
		t.Errorf("istio-waypoint class %+v", spec)
	}
	for _, name := range []string{"istio", "istio-remote"} {
		if store.Get(gvk.GatewayClass, name, "") == nil {
			t.Errorf("class %s not created", name)
		}
	}
}
