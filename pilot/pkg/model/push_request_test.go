package model_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func vs(name string) model.ConfigKey {
	return model.ConfigKey{Kind: kind.VirtualService, Name: name, Namespace: "default"}
}

func se(name string) model.ConfigKey {
	return model.ConfigKey{Kind: kind.ServiceEntry, Name: name, Namespace: "default"}
}

// assertNoServiceKind fails the test when a request names kind.Service in
// ConfigsUpdated: service changes are keyed as ServiceEntry.
func assertNoServiceKind(t *testing.T, reqs ...*model.PushRequest) {
	t.Helper()
	for _, r := range reqs {
		if r == nil {
			continue
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("invariant broken: %v", err)
		}
	}
}

func TestMerge(t *testing.T) {
	env := newPCEnv(t).env
	pcOld := model.InitContext(env, nil, nil)
	pcNew := model.InitContext(env, pcOld, &model.PushRequest{Full: true})
	cases := []struct {
		name       string
		a, b       *model.PushRequest
		want       *model.PushRequest
		everything bool
	}{
		{
			name: "both nil",
		},
		{
			name: "nil left returns right",
			b:    &model.PushRequest{Full: true, Reason: model.NewReasonStats(model.ConfigUpdate)},
			want: &model.PushRequest{Full: true, Reason: model.NewReasonStats(model.ConfigUpdate)},
			// a full request with no keys concerns everything
			everything: true,
		},
		{
			name: "reasons summed, not deduplicated",
			a:    &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(vs("a")), Reason: model.NewReasonStats(model.ConfigUpdate)},
			b:    &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(vs("b")), Reason: model.NewReasonStats(model.ConfigUpdate, model.ServiceUpdate)},
			want: &model.PushRequest{
				Full: true, ConfigsUpdated: model.NewConfigKeys(vs("a"), vs("b")),
				Reason: model.ReasonStats{model.ConfigUpdate: 2, model.ServiceUpdate: 1},
			},
		},
		{
			name: "full and forced OR'd",
			a:    &model.PushRequest{Forced: true, Full: true, Reason: model.NewReasonStats(model.GlobalUpdate)},
			b:    &model.PushRequest{ConfigsUpdated: model.NewConfigKeys(se("x")), Reason: model.NewReasonStats(model.EndpointUpdate)},
			want: &model.PushRequest{
				Full: true, Forced: true,
				Reason: model.ReasonStats{model.GlobalUpdate: 1, model.EndpointUpdate: 1},
			},
			everything: true,
		},
		{
			name: "endpoint-only requests stay incremental and union",
			a:    &model.PushRequest{ConfigsUpdated: model.NewConfigKeys(se("x")), Reason: model.NewReasonStats(model.EndpointUpdate)},
			b:    &model.PushRequest{ConfigsUpdated: model.NewConfigKeys(se("y"), se("x")), Reason: model.NewReasonStats(model.EndpointUpdate)},
			want: &model.PushRequest{
				ConfigsUpdated: model.NewConfigKeys(se("x"), se("y")),
				Reason:         model.ReasonStats{model.EndpointUpdate: 2},
			},
		},
		{
			name: "incremental merged into full keeps the keys of both",
			a:    &model.PushRequest{ConfigsUpdated: model.NewConfigKeys(se("x"))},
			b:    &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(vs("a"))},
			want: &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(se("x"), vs("a")), Reason: model.ReasonStats{}},
		},
		{
			name:       "empty full set on the left means everything and wins",
			a:          &model.PushRequest{Full: true},
			b:          &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(vs("a"))},
			want:       &model.PushRequest{Full: true, Reason: model.ReasonStats{}},
			everything: true,
		},
		{
			name:       "empty full set on the right means everything and wins",
			a:          &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(vs("a"))},
			b:          &model.PushRequest{Full: true},
			want:       &model.PushRequest{Full: true, Reason: model.ReasonStats{}},
			everything: true,
		},
		{
			name: "an empty incremental set does not mean everything",
			a:    &model.PushRequest{},
			b:    &model.PushRequest{ConfigsUpdated: model.NewConfigKeys(se("x"))},
			want: &model.PushRequest{ConfigsUpdated: model.NewConfigKeys(se("x")), Reason: model.ReasonStats{}},
		},
		{
			name: "newer push context kept, earlier start kept",
			a:    &model.PushRequest{Push: pcOld, Start: t0.Add(time.Second)},
			b:    &model.PushRequest{Push: pcNew, Start: t0},
			want: &model.PushRequest{Push: pcNew, Start: t0, Reason: model.ReasonStats{}},
		},
		{
			// a request built from an older snapshot that arrives last (a
			// late endpoint push) must not take a connection back to it
			name: "newer push context kept when the later request carries an older one",
			a:    &model.PushRequest{Push: pcNew, Start: t0},
			b:    &model.PushRequest{Push: pcOld, Start: t0.Add(time.Second)},
			want: &model.PushRequest{Push: pcNew, Start: t0, Reason: model.ReasonStats{}},
		},
		{
			name: "older push context kept when the newer request has none",
			a:    &model.PushRequest{Push: pcOld, Start: t0},
			b:    &model.PushRequest{Start: t0.Add(time.Second)},
			want: &model.PushRequest{Push: pcOld, Start: t0, Reason: model.ReasonStats{}},
		},
		{
			name: "zero start is not earliest",
			a:    &model.PushRequest{},
			b:    &model.PushRequest{Start: t0},
			want: &model.PushRequest{Start: t0, Reason: model.ReasonStats{}},
		},
		{
			name: "subscription deltas applied in order",
			a: &model.PushRequest{Delta: model.ResourceDelta{
				Subscribed: names("a", "b"), Unsubscribed: names("c"),
			}},
			b: &model.PushRequest{Delta: model.ResourceDelta{
				Subscribed: names("c"), Unsubscribed: names("b", "d"),
			}},
			want: &model.PushRequest{Reason: model.ReasonStats{}, Delta: model.ResourceDelta{
				Subscribed: names("a", "c"), Unsubscribed: names("b", "d"),
			}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertNoServiceKind(t, tc.a, tc.b)
			aBefore, bBefore := tc.a.Copy(), tc.b.Copy()
			got := tc.a.Merge(tc.b)
			assertRequestEqual(t, "Merge", got, tc.want)
			if got != nil && got.IsEverything() != tc.everything {
				t.Errorf("IsEverything = %t, want %t", got.IsEverything(), tc.everything)
			}
			// inputs untouched
			assertRequestEqual(t, "left input after Merge", tc.a, aBefore)
			assertRequestEqual(t, "right input after Merge", tc.b, bBefore)
			assertNoServiceKind(t, got)

			// MergeInPlace agrees with Merge
			if tc.a != nil {
				acc := tc.a.Copy()
				acc.MergeInPlace(tc.b)
				assertRequestEqual(t, "MergeInPlace", acc, tc.want)
				assertRequestEqual(t, "right input after MergeInPlace", tc.b, bBefore)
			}
		})
	}
}

func names(n ...string) map[string]struct{} {
	out := map[string]struct{}{}
	for _, x := range n {
		out[x] = struct{}{}
	}
	return out
}

// assertRequestEqual compares requests treating nil and empty sets alike.
func assertRequestEqual(t *testing.T, what string, got, want *model.PushRequest) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	if got == nil {
		return
	}
	norm := func(r *model.PushRequest) model.PushRequest {
		c := *r
		if len(c.ConfigsUpdated) == 0 {
			c.ConfigsUpdated = nil
		}
		if len(c.Reason) == 0 {
			c.Reason = nil
		}
		if len(c.Delta.Subscribed) == 0 {
			c.Delta.Subscribed = nil
		}
		if len(c.Delta.Unsubscribed) == 0 {
			c.Delta.Unsubscribed = nil
		}
		return c
	}
	g, w := norm(got), norm(want)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got  %v (push %p start %v delta %v)\n want %v (push %p start %v delta %v)",
			what, got, g.Push, g.Start, g.Delta, want, w.Push, w.Start, w.Delta)
	}
	if g.Push != w.Push {
		t.Errorf("%s: push context %p, want %p", what, g.Push, w.Push)
	}
}

func TestMergeChainIsAssociativeOnKeys(t *testing.T) {
	reqs := []*model.PushRequest{
		{Full: true, ConfigsUpdated: model.NewConfigKeys(vs("a")), Reason: model.NewReasonStats(model.ConfigUpdate)},
		{ConfigsUpdated: model.NewConfigKeys(se("x")), Reason: model.NewReasonStats(model.EndpointUpdate)},
		{Full: true, ConfigsUpdated: model.NewConfigKeys(vs("b")), Reason: model.NewReasonStats(model.ConfigUpdate)},
	}
	var left *model.PushRequest
	for _, r := range reqs {
		left = left.Merge(r)
	}
	right := reqs[0].Merge(reqs[1].Merge(reqs[2]))
	assertRequestEqual(t, "chain", left, right)
	if left.Reason.Count() != 3 {
		t.Fatalf("reason count = %d", left.Reason.Count())
	}
}

func TestCopyIsIndependent(t *testing.T) {
	orig := &model.PushRequest{
		Full: true, ConfigsUpdated: model.NewConfigKeys(vs("a")),
		Reason: model.NewReasonStats(model.ConfigUpdate),
		Delta:  model.ResourceDelta{Subscribed: names("x")},
	}
	c := orig.Copy()
	c.ConfigsUpdated[vs("b")] = struct{}{}
	c.Reason.Add(model.ConfigUpdate)
	c.Delta.Subscribed["y"] = struct{}{}
	if len(orig.ConfigsUpdated) != 1 || orig.Reason.Count() != 1 || len(orig.Delta.Subscribed) != 1 {
		t.Fatalf("Copy shares state with the original: %v", orig)
	}
	var nilReq *model.PushRequest
	if nilReq.Copy() != nil {
		t.Fatal("nil copy not nil")
	}
}

func TestValidateRejectsServiceKind(t *testing.T) {
	ok := &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(se("reviews"))}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(
		model.ConfigKey{Kind: kind.Service, Name: "reviews", Namespace: "default"})}
	err := bad.Validate()
	if err == nil || !strings.Contains(err.Error(), "Service/default/reviews") {
		t.Fatalf("Validate = %v", err)
	}
}

func TestRequestHelpers(t *testing.T) {
	r := &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(
		vs("b"), vs("a"), se("z"), model.ConfigKey{Kind: kind.DestinationRule, Name: "r", Namespace: "a"}),
		Reason: model.NewReasonStats(model.ConfigUpdate, model.ConfigUpdate, model.EndpointUpdate)}
	keys := r.ConfigKeys()
	var got []string
	for _, k := range keys {
		got = append(got, k.String())
	}
	want := []string{"DestinationRule/a/r", "ServiceEntry/default/z", "VirtualService/default/a", "VirtualService/default/b"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ConfigKeys = %v", got)
	}
	if s := r.String(); s != "full=true forced=false reasons=config:2,endpoint:1 configs=[DestinationRule/a/r ServiceEntry/default/z VirtualService/default/a VirtualService/default/b]" {
		t.Fatalf("String = %q", s)
	}
	if s := (&model.PushRequest{Full: true, Forced: true, Reason: model.NewReasonStats(model.GlobalUpdate)}).String(); s != "full=true forced=true reasons=global:1 configs=*" {
		t.Fatalf("String = %q", s)
	}
	if !model.HasConfigsOfKind(r.ConfigsUpdated, kind.VirtualService) || model.HasConfigsOfKind(r.ConfigsUpdated, kind.Gateway) {
		t.Fatal("HasConfigsOfKind")
	}
	if n := len(model.ConfigsOfKind(r.ConfigsUpdated, kind.VirtualService)); n != 2 {
		t.Fatalf("ConfigsOfKind = %d", n)
	}
	if !reflect.DeepEqual(model.ConfigNamesOfKind(r.ConfigsUpdated, kind.VirtualService), names("a", "b")) {
		t.Fatal("ConfigNamesOfKind")
	}
	if (&model.PushRequest{Reason: model.NewReasonStats(model.ProxyRequest)}).IsRequest() != true ||
		r.IsRequest() || r.IsProxyUpdate() {
		t.Fatal("IsRequest/IsProxyUpdate")
	}
}

func TestStringTruncates(t *testing.T) {
	r := &model.PushRequest{Full: true, ConfigsUpdated: map[model.ConfigKey]struct{}{}}
	for i := range 25 {
		r.ConfigsUpdated[vs(fmt.Sprintf("vs-%02d", i))] = struct{}{}
	}
	if s := r.String(); !strings.HasSuffix(s, "(+15 more)") {
		t.Fatalf("String = %q", s)
	}
}

func requestWithKeys(prefix string, n int) *model.PushRequest {
	r := &model.PushRequest{Full: true, ConfigsUpdated: make(map[model.ConfigKey]struct{}, n), Reason: model.NewReasonStats(model.ConfigUpdate)}
	for i := range n {
		r.ConfigsUpdated[vs(fmt.Sprintf("%s-%d", prefix, i))] = struct{}{}
	}
	return r
}

// BenchmarkMerge1000Keys merges two requests of 1,000 keys each (half shared).
func BenchmarkMerge1000Keys(b *testing.B) {
	a := requestWithKeys("k", 1000)
	c := requestWithKeys("k", 1000)
	for i := range 500 {
		delete(c.ConfigsUpdated, vs(fmt.Sprintf("k-%d", i)))
		c.ConfigsUpdated[vs(fmt.Sprintf("other-%d", i))] = struct{}{}
	}
	b.Run("Merge", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(a.Merge(c).ConfigsUpdated) != 1500 {
				b.Fatal("bad merge")
			}
		}
	})
	b.Run("MergeInPlace", func(b *testing.B) {
		b.ReportAllocs()
		acc := a.Copy()
		for b.Loop() {
			acc.MergeInPlace(c)
		}
		if len(acc.ConfigsUpdated) != 1500 {
			b.Fatal("bad merge")
		}
	})
}
