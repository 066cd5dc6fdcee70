package model_test

import (
	"strings"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// vsConfig returns a VirtualService routing to host; mutate tweaks it.
func vsConfig(host string, mutate ...func(*config.Config)) config.Config {
	c := config.Config{
		Meta: config.Meta{
			GroupVersionKind: gvk.VirtualService, Name: "reviews", Namespace: "default",
			ResourceVersion: "1",
			Labels:          map[string]string{"app": "reviews"},
			Annotations:     map[string]string{"team": "a"},
		},
		Spec: &networking.VirtualService{
			Hosts: []string{"reviews"},
			Http:  []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: host}}}}},
		},
	}
	for _, m := range mutate {
		m(&c)
	}
	return c
}

func label(k, v string) func(*config.Config) {
	return func(c *config.Config) { c.Labels[k] = v }
}

func annotation(k, v string) func(*config.Config) {
	return func(c *config.Config) { c.Annotations[k] = v }
}

func TestNeedsPush(t *testing.T) {
	type nonProtoSpec struct{ A string }
	route := func(spec gatewayv1.HTTPRouteSpec) config.Config {
		return config.Config{Meta: config.Meta{GroupVersionKind: gvk.HTTPRoute, Name: "r", Namespace: "default"}, Spec: &spec}
	}
	cases := []struct {
		name       string
		prev, curr config.Config
		push       bool
		rule       model.PushRule
	}{
		{"identical resync", vsConfig("v1"), vsConfig("v1"), false, model.RuleSpecUnchanged},
		{"resource version only", vsConfig("v1"), vsConfig("v1", func(c *config.Config) { c.ResourceVersion = "2"; c.Generation = 3 }), false, model.RuleSpecUnchanged},
		{"spec changed", vsConfig("v1"), vsConfig("v2"), true, model.RuleSpecChanged},
		{"different GVK", vsConfig("v1"), vsConfig("v1", func(c *config.Config) { c.GroupVersionKind = gvk.VirtualService_v1beta1 }), true, model.RuleKindChanged},
		{"non-istio group always pushes, even unchanged", route(gatewayv1.HTTPRouteSpec{}), route(gatewayv1.HTTPRouteSpec{}), true, model.RuleNonIstioGroup},
		{"helm release annotation does not push", vsConfig("v1"), vsConfig("v1", annotation("meta.helm.sh/release-name", "foo")), false, model.RuleSpecUnchanged},
		{"helm managed-by label does not push", vsConfig("v1"), vsConfig("v1", label("app.kubernetes.io/managed-by", "Helm")), false, model.RuleSpecUnchanged},
		{"argo tracking id does not push", vsConfig("v1"), vsConfig("v1", annotation("argocd.argoproj.io/tracking-id", "abc")), false, model.RuleSpecUnchanged},
		{"kubectl last-applied does not push", vsConfig("v1"), vsConfig("v1", annotation("kubectl.kubernetes.io/last-applied-configuration", "{}")), false, model.RuleSpecUnchanged},
		{"other label change does not push", vsConfig("v1"), vsConfig("v1", label("app", "ratings")), false, model.RuleSpecUnchanged},
		{"istio.io/rev label changed pushes", vsConfig("v1", label("istio.io/rev", "canary")), vsConfig("v1", label("istio.io/rev", "stable")), true, model.RuleIstioMetadata},
		{"istio.io/rev label added pushes", vsConfig("v1"), vsConfig("v1", label("istio.io/rev", "canary")), true, model.RuleIstioMetadata},
		{"istio.io/rev label removed pushes", vsConfig("v1", label("istio.io/rev", "canary")), vsConfig("v1"), true, model.RuleIstioMetadata},
		{"internal.istio.io annotation added pushes", vsConfig("v1"), vsConfig("v1", annotation("internal.istio.io/parents", "x")), true, model.RuleIstioMetadata},
		{"networking.istio.io annotation removed pushes", vsConfig("v1", annotation("networking.istio.io/exportTo", ".")), vsConfig("v1"), true, model.RuleIstioMetadata},
		{"unchanged istio.io metadata does not push", vsConfig("v1", label("istio.io/rev", "canary")), vsConfig("v1", label("istio.io/rev", "canary"), annotation("meta.helm.sh/release-name", "x")), false, model.RuleSpecUnchanged},
		{"always-push label on new", vsConfig("v1"), vsConfig("v1", label(model.AlwaysPushLabel, "")), true, model.RuleAlwaysPush},
		{"always-push annotation on old only", vsConfig("v1", annotation(model.AlwaysPushLabel, "true")), vsConfig("v1"), true, model.RuleAlwaysPush},
		{"always-push on both, nothing changed", vsConfig("v1", annotation(model.AlwaysPushLabel, "true")), vsConfig("v1", annotation(model.AlwaysPushLabel, "true")), true, model.RuleAlwaysPush},
		{"non-proto spec pushes", vsConfig("v1", func(c *config.Config) { c.Spec = nonProtoSpec{"a"} }), vsConfig("v1", func(c *config.Config) { c.Spec = nonProtoSpec{"a"} }), true, model.RuleSpecNotProto},
		{"nil spec pushes", vsConfig("v1", func(c *config.Config) { c.Spec = nil }), vsConfig("v1", func(c *config.Config) { c.Spec = nil }), true, model.RuleSpecNotProto},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := model.DecideNeedsPush(tc.prev, tc.curr)
			if d.Push != tc.push || d.Rule != tc.rule {
				t.Fatalf("decision = %+v, want push=%t rule=%s", d, tc.push, tc.rule)
			}
			if got := model.NeedsPush(tc.prev, tc.curr); got != tc.push {
				t.Fatalf("NeedsPush = %t", got)
			}
		})
	}
}

func TestNeedsPushDetails(t *testing.T) {
	d := model.DecideNeedsPush(vsConfig("v1"), vsConfig("v1",
		annotation("meta.helm.sh/release-name", "foo"), annotation("argocd.argoproj.io/tracking-id", "abc")))
	want := "only metadata outside istio.io changed: annotations[argocd.argoproj.io/tracking-id], annotations[meta.helm.sh/release-name]"
	if d.Detail != want {
		t.Fatalf("detail = %q", d.Detail)
	}
	d = model.DecideNeedsPush(vsConfig("v1"), vsConfig("v1", label("istio.io/rev", "canary")))
	if d.Detail != "labels[istio.io/rev]" {
		t.Fatalf("detail = %q", d.Detail)
	}
	d = model.DecideNeedsPush(vsConfig("v1"), vsConfig("v1"))
	if !strings.Contains(d.Detail, "resync") {
		t.Fatalf("detail = %q", d.Detail)
	}
}

func TestSuppressedUpdatesRing(t *testing.T) {
	s := model.NewSuppressedUpdates(3)
	if got := s.List(); len(got) != 0 {
		t.Fatalf("empty ring lists %v", got)
	}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		s.Record(model.SuppressedUpdate{Name: n})
	}
	var got []string
	for _, u := range s.List() {
		got = append(got, u.Name)
	}
	if strings.Join(got, "") != "edc" || s.Total() != 5 {
		t.Fatalf("list = %v total = %d", got, s.Total())
	}
	if n := len(model.NewSuppressedUpdates(0).List()); n != 0 {
		t.Fatal("default ring not empty")
	}
}

func TestConfigPushHandler(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var got []*model.PushRequest
	sup := model.NewSuppressedUpdates(0)
	h := model.NewConfigPushHandler(func(r *model.PushRequest) { got = append(got, r) }, sup, clk)
	var handler model.EventHandler = h.Handle

	wantKey := model.ConfigKey{Kind: kind.VirtualService, Name: "reviews", Namespace: "default"}
	steps := []struct {
		name       string
		old, cur   config.Config
		ev         model.Event
		pushed     bool
		suppressed model.PushRule
	}{
		{name: "add pushes", cur: vsConfig("v1"), ev: model.EventAdd, pushed: true},
		{name: "helm annotation suppressed", old: vsConfig("v1"), cur: vsConfig("v1", annotation("meta.helm.sh/release-name", "x")), ev: model.EventUpdate, suppressed: model.RuleSpecUnchanged},
		{name: "spec change pushes", old: vsConfig("v1"), cur: vsConfig("v2"), ev: model.EventUpdate, pushed: true},
		{name: "delete pushes", cur: vsConfig("v2"), ev: model.EventDelete, pushed: true},
		{
			name: "Service kind never becomes a key",
			cur:  config.Config{Meta: config.Meta{GroupVersionKind: gvk.Service, Name: "reviews", Namespace: "default"}},
			ev:   model.EventAdd, suppressed: model.RuleServiceKind,
		},
		{
			name: "unknown kind ignored",
			cur:  config.Config{Meta: config.Meta{GroupVersionKind: config.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}, Name: "x"}},
			ev:   model.EventAdd, suppressed: model.RuleUnknownKind,
		},
	}
	for _, st := range steps {
		before, beforeSup := len(got), sup.Total()
		clk.Advance(time.Second)
		handler(st.old, st.cur, st.ev)
		if pushed := len(got) > before; pushed != st.pushed {
			t.Fatalf("%s: pushed = %t", st.name, pushed)
		}
		if st.pushed {
			r := got[len(got)-1]
			assertNoServiceKind(t, r)
			if !r.Full || r.Forced || len(r.ConfigsUpdated) != 1 || r.Reason[model.ConfigUpdate] != 1 || !r.Start.Equal(clk.Now()) {
				t.Fatalf("%s: request %v start %v", st.name, r, r.Start)
			}
			if _, ok := r.ConfigsUpdated[wantKey]; !ok {
				t.Fatalf("%s: keys %v", st.name, r.ConfigKeys())
			}
		}
		if st.suppressed != "" {
			if sup.Total() != beforeSup+1 {
				t.Fatalf("%s: not recorded as suppressed", st.name)
			}
			last := sup.List()[0]
			if last.Rule != st.suppressed || !last.Time.Equal(clk.Now()) || last.Name != st.cur.Name {
				t.Fatalf("%s: recorded %+v", st.name, last)
			}
		}
	}
	// a handler without a ring still works
	model.NewConfigPushHandler(func(*model.PushRequest) {}, nil, nil).
		Handle(vsConfig("v1"), vsConfig("v1"), model.EventUpdate)
}
