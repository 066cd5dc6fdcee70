package krt_test

import (
	"strings"
	"testing"

	"github.com/meshplane/istiod/pkg/kube/krt"
)

type meshConfig struct {
	Domain string
	Names  []string
}

func TestStaticSingleton(t *testing.T) {
	stop := stopper(t)
	s := krt.NewStatic(&meshConfig{Domain: "cluster.local"}, krt.WithStop(stop))
	if got := s.Get(); got == nil || got.Domain != "cluster.local" {
		t.Fatalf("Get = %+v", got)
	}
	r := record(t, s.AsCollection())
	r.expect(t, krt.EventAdd, nil, &meshConfig{Domain: "cluster.local"})
	s.Set(&meshConfig{Domain: "cluster.local"}) // equal: no event
	s.Set(&meshConfig{Domain: "example.com"})
	r.expect(t, krt.EventUpdate, &meshConfig{Domain: "cluster.local"}, &meshConfig{Domain: "example.com"})
	s.Set(nil)
	r.expect(t, krt.EventDelete, &meshConfig{Domain: "example.com"}, nil)
	if s.Get() != nil {
		t.Fatal("Get after Set(nil) is not nil")
	}
}

func TestSingletonRecomputedOnInputChange(t *testing.T) {
	stop := stopper(t)
	domain := krt.NewStatic(&meshConfig{Domain: "cluster.local"}, krt.WithStop(stop))
	names := krt.NewStaticCollection([]named{{"a", ""}}, krt.WithStop(stop))
	runs := &counter{}
	s := krt.NewSingleton(func(ctx krt.HandlerContext) *meshConfig {
		runs.inc("s")
		d := krt.FetchOne(ctx, domain.AsCollection())
		if d == nil {
			return nil
		}
		return &meshConfig{Domain: d.Domain, Names: keysOf(krt.Fetch(ctx, names), named.ResourceName)}
	}, krt.WithStop(stop))
	waitSynced(t, s.AsCollection())
	if got := s.Get(); got == nil || got.Domain != "cluster.local" || strings.Join(got.Names, ",") != "a" {
		t.Fatalf("Get = %+v", got)
	}
	events := make(chan krt.Event[meshConfig], 10)
	reg := s.Register(func(e krt.Event[meshConfig]) { events <- e })
	defer reg.UnregisterHandler()
	next := func() krt.Event[meshConfig] {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-timeAfterTimeout():
			t.Fatal("timed out")
		}
		panic("unreachable")
	}
	if e := next(); e.Event != krt.EventAdd {
		t.Fatalf("first event %v", e.Event)
	}
	names.Set(named{"b", ""})
	if e := next(); e.Event != krt.EventUpdate || strings.Join(e.New.Names, ",") != "a,b" {
		t.Fatalf("after names change: %v %+v", e.Event, e.New)
	}
	domain.Set(&meshConfig{Domain: "example.com"})
	if e := next(); e.Event != krt.EventUpdate || e.New.Domain != "example.com" {
		t.Fatalf("after domain change: %v %+v", e.Event, e.New)
	}
	domain.Set(nil)
	if e := next(); e.Event != krt.EventDelete {
		t.Fatalf("after domain removal: %v", e.Event)
	}
	if n := runs.get("s"); n != 4 {
		t.Fatalf("singleton computed %d times, want 4", n)
	}
}
