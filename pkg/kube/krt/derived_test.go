package krt_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/meshplane/istiod/pkg/kube/krt"
)

func upper(n named) named { return named{Key: n.Key, Value: strings.ToUpper(n.Value)} }

func TestMapCollection(t *testing.T) {
	stop := stopper(t)
	in := krt.NewStaticCollection([]named{{"a", "x"}}, krt.WithStop(stop))
	out := krt.MapCollection(in, upper, krt.WithStop(stop))
	waitSynced(t, out)
	if got := out.GetKey("a"); got == nil || got.Value != "X" {
		t.Fatalf("GetKey(a) = %v", got)
	}
	r := record(t, out)
	r.expect(t, krt.EventAdd, nil, &named{"a", "X"})
	in.Set(named{"a", "y"})
	r.expect(t, krt.EventUpdate, &named{"a", "X"}, &named{"a", "Y"})
	in.Set(named{"b", "z"})
	r.expect(t, krt.EventAdd, nil, &named{"b", "Z"})
	in.Delete("a")
	r.expect(t, krt.EventDelete, &named{"a", "Y"}, nil)
}

func TestNewCollectionZeroOrOne(t *testing.T) {
	stop := stopper(t)
	in := krt.NewStaticCollection([]named{{"a", "keep"}, {"b", "drop"}}, krt.WithStop(stop))
	out := krt.NewCollection(in, func(_ krt.HandlerContext, n named) *named {
		if n.Value == "drop" {
			return nil
		}
		return &named{n.Key, "kept:" + n.Value}
	}, krt.WithStop(stop))
	waitSynced(t, out)
	if l := out.List(); len(l) != 1 || l[0].Key != "a" {
		t.Fatalf("List = %v", l)
	}
	r := record(t, out)
	r.expect(t, krt.EventAdd, nil, &named{"a", "kept:keep"})
	in.Set(named{"a", "drop"}) // output disappears
	r.expect(t, krt.EventDelete, &named{"a", "kept:keep"}, nil)
	in.Set(named{"b", "keep"}) // output appears
	r.expect(t, krt.EventAdd, nil, &named{"b", "kept:keep"})
}

func TestNewManyCollection(t *testing.T) {
	stop := stopper(t)
	in := krt.NewStaticCollection([]named{{"a", "x,y"}}, krt.WithStop(stop))
	out := krt.NewManyCollection(in, func(_ krt.HandlerContext, n named) []named {
		var res []named
		for _, part := range strings.Split(n.Value, ",") {
			res = append(res, named{n.Key + "/" + part, part})
		}
		return res
	}, krt.WithStop(stop))
	waitSynced(t, out)
	r := record(t, out)
	r.expect(t, krt.EventAdd, nil, &named{"a/x", "x"})
	r.expect(t, krt.EventAdd, nil, &named{"a/y", "y"})
	in.Set(named{"a", "x,z"}) // a/x unchanged: no event
	r.expect(t, krt.EventDelete, &named{"a/y", "y"}, nil)
	r.expect(t, krt.EventAdd, nil, &named{"a/z", "z"})
	in.Delete("a")
	r.expect(t, krt.EventDelete, &named{"a/x", "x"}, nil)
	r.expect(t, krt.EventDelete, &named{"a/z", "z"}, nil)
}

// counter counts transform runs per input.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) inc(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

func podsToInfo(runs *counter, services krt.Collection[service]) func(krt.HandlerContext, pod) *podInfo {
	return func(ctx krt.HandlerContext, p pod) *podInfo {
		runs.inc(p.Name)
		info := &podInfo{Pod: p.ResourceName(), IP: p.IP}
		if p.Service == "" {
			return info
		}
		if s := krt.FetchOne(ctx, services, krt.FilterKey(p.Namespace+"/"+p.Service)); s != nil {
			info.VIP = s.VIP
		}
		return info
	}
}

func TestDependencyTracking(t *testing.T) {
	stop := stopper(t)
	services := krt.NewStaticCollection([]service{
		{Name: "s1", Namespace: "ns", VIP: "10.0.0.1"},
		{Name: "s2", Namespace: "ns", VIP: "10.0.0.2"},
		{Name: "s3", Namespace: "ns", VIP: "10.0.0.3"},
	}, krt.WithStop(stop))
	pods := krt.NewStaticCollection([]pod{
		{Name: "p1", Namespace: "ns", Service: "s1"},
		{Name: "p2", Namespace: "ns", Service: "s2"},
		{Name: "p3", Namespace: "ns", Service: "s1"},
	}, krt.WithStop(stop))
	runs := &counter{}
	infos := krt.NewCollection(pods, podsToInfo(runs, services), krt.WithStop(stop))
	waitSynced(t, infos)
	if got := infos.GetKey("ns/p1"); got == nil || got.VIP != "10.0.0.1" {
		t.Fatalf("p1 = %+v", got)
	}
	r := record(t, infos)
	for range 3 {
		r.next(t) // initial adds
	}
	// barrier: a change of the primary is processed after everything queued
	// before it, so once its event arrives the earlier events were handled.
	barrier := func(name string) {
		t.Helper()
		pods.Set(pod{Name: name, Namespace: "ns"})
		r.expect(t, krt.EventAdd, nil, &podInfo{Pod: "ns/" + name})
	}

	services.Set(service{Name: "s3", Namespace: "ns", VIP: "10.9.9.9"}) // nobody fetched s3
	services.Set(service{Name: "s4", Namespace: "other"})               // nor s4
	barrier("b1")
	for _, p := range []string{"p1", "p2", "p3"} {
		if n := runs.get(p); n != 1 {
			t.Fatalf("%s ran %d times after unrelated service changes, want 1", p, n)
		}
	}

	services.Set(service{Name: "s1", Namespace: "ns", VIP: "10.0.0.11"})
	got := map[string]string{}
	for range 2 {
		e := r.next(t)
		if e.Event != krt.EventUpdate {
			t.Fatalf("got %v, want update", e.Event)
		}
		got[e.New.Pod] = e.Old.VIP + "->" + e.New.VIP
	}
	if got["ns/p1"] != "10.0.0.1->10.0.0.11" || got["ns/p3"] != "10.0.0.1->10.0.0.11" {
		t.Fatalf("updates = %v", got)
	}
	if runs.get("p2") != 1 {
		t.Fatalf("p2 recomputed on a change of s1: %d runs", runs.get("p2"))
	}

	// p2 moves to s1: its dependency on s2 is dropped.
	pods.Set(pod{Name: "p2", Namespace: "ns", Service: "s1"})
	r.expect(t, krt.EventUpdate, &podInfo{Pod: "ns/p2", VIP: "10.0.0.2"}, &podInfo{Pod: "ns/p2", VIP: "10.0.0.11"})
	services.Set(service{Name: "s2", Namespace: "ns", VIP: "10.0.0.22"})
	barrier("b2")
	if n := runs.get("p2"); n != 2 {
		t.Fatalf("p2 ran %d times, want 2 (s2 is no longer a dependency)", n)
	}

	// a service appearing later is picked up by the pod that looked for it.
	pods.Set(pod{Name: "p5", Namespace: "ns", Service: "s5"})
	r.expect(t, krt.EventAdd, nil, &podInfo{Pod: "ns/p5"})
	services.Set(service{Name: "s5", Namespace: "ns", VIP: "10.0.0.5"})
	r.expect(t, krt.EventUpdate, &podInfo{Pod: "ns/p5"}, &podInfo{Pod: "ns/p5", VIP: "10.0.0.5"})
	services.Delete("ns/s5")
	r.expect(t, krt.EventUpdate, &podInfo{Pod: "ns/p5", VIP: "10.0.0.5"}, &podInfo{Pod: "ns/p5"})
}

// endpoints counts the pods a service selects.
type endpoints struct {
	Service string
	Pods    []string
}

func (e endpoints) ResourceName() string { return e.Service }

func TestDependencyTrackingByLabelsAndNamespace(t *testing.T) {
	stop := stopper(t)
	pods := krt.NewStaticCollection([]pod{
		{Name: "p1", Namespace: "ns", Labels: labels("app", "a")},
		{Name: "p2", Namespace: "ns", Labels: labels("app", "b")},
	}, krt.WithStop(stop))
	services := krt.NewStaticCollection([]service{
		{Name: "a", Namespace: "ns", Selector: labels("app", "a")},
	}, krt.WithStop(stop))
	runs := &counter{}
	eps := krt.NewCollection(services, func(ctx krt.HandlerContext, s service) *endpoints {
		runs.inc(s.Name)
		selected := krt.Fetch(ctx, pods, krt.FilterNamespace(s.Namespace), krt.FilterLabel(s.Selector))
		return &endpoints{Service: s.ResourceName(), Pods: keysOf(selected, pod.ResourceName)}
	}, krt.WithStop(stop))
	waitSynced(t, eps)
	r := record(t, eps)
	r.expect(t, krt.EventAdd, nil, &endpoints{"ns/a", []string{"ns/p1"}})

	pods.Set(pod{Name: "p3", Namespace: "other", Labels: labels("app", "a")}) // other namespace
	pods.Set(pod{Name: "p2", Namespace: "ns", Labels: labels("app", "c")})    // not selected before or after
	services.Set(service{Name: "barrier", Namespace: "ns"})
	r.expect(t, krt.EventAdd, nil, &endpoints{"ns/barrier", []string{"ns/p1", "ns/p2"}})
	if n := runs.get("a"); n != 1 {
		t.Fatalf("service a ran %d times, want 1", n)
	}
	pods.Set(pod{Name: "p2", Namespace: "ns", Labels: labels("app", "a")}) // now selected
	r.expect(t, krt.EventUpdate, &endpoints{"ns/a", []string{"ns/p1"}}, &endpoints{"ns/a", []string{"ns/p1", "ns/p2"}})
	pods.Set(pod{Name: "p1", Namespace: "ns", Labels: labels("app", "z")}) // selected before only
	r.expect(t, krt.EventUpdate, &endpoints{"ns/a", []string{"ns/p1", "ns/p2"}}, &endpoints{"ns/a", []string{"ns/p2"}})
}

func TestFilterSelects(t *testing.T) {
	stop := stopper(t)
	services := krt.NewStaticCollection([]service{
		{Name: "a", Namespace: "ns", Selector: labels("app", "a")},
		{Name: "all", Namespace: "ns"}, // no selector: selects nothing
		{Name: "b", Namespace: "ns", Selector: labels("app", "b")},
	}, krt.WithStop(stop))
	pods := krt.NewStaticCollection([]pod{{Name: "p", Namespace: "ns", Labels: labels("app", "a", "v", "1")}}, krt.WithStop(stop))
	out := krt.NewCollection(pods, func(ctx krt.HandlerContext, p pod) *endpoints {
		svcs := krt.Fetch(ctx, services, krt.FilterSelects(p.Labels))
		return &endpoints{Service: p.ResourceName(), Pods: keysOf(svcs, service.ResourceName)}
	}, krt.WithStop(stop))
	waitSynced(t, out)
	r := record(t, out)
	r.expect(t, krt.EventAdd, nil, &endpoints{"ns/p", []string{"ns/a"}})
	services.Set(service{Name: "b", Namespace: "ns", Selector: labels("v", "1")})
	r.expect(t, krt.EventUpdate, &endpoints{"ns/p", []string{"ns/a"}}, &endpoints{"ns/p", []string{"ns/a", "ns/b"}})

	// The generic filter and the selector func see the same objects.
	got := krt.Fetch(nil, services,
		krt.FilterSelectsWith(labels("v", "1"), func(o any) map[string]string { return o.(service).Selector }),
		krt.FilterGeneric(func(o any) bool { return o.(service).Name != "zzz" }))
	if len(got) != 1 || got[0].Name != "b" {
		t.Fatalf("Fetch = %+v", got)
	}
}

func TestDiscardResult(t *testing.T) {
	stop := stopper(t)
	in := krt.NewStaticCollection([]named{{"a", "good1"}, {"b", "bad"}}, krt.WithStop(stop))
	out := krt.NewCollection(in, func(ctx krt.HandlerContext, n named) *named {
		if n.Value == "bad" {
			ctx.DiscardResult()
			return nil
		}
		return &named{n.Key, "out:" + n.Value}
	}, krt.WithStop(stop))
	waitSynced(t, out)
	if out.GetKey("b") != nil {
		t.Fatal("a discarded first result produced an output")
	}
	r := record(t, out)
	r.expect(t, krt.EventAdd, nil, &named{"a", "out:good1"})
	in.Set(named{"a", "bad"}) // keeps out:good1, no event
	in.Set(named{"a", "good2"})
	r.expect(t, krt.EventUpdate, &named{"a", "out:good1"}, &named{"a", "out:good2"})
}

func TestOutputKeyConflict(t *testing.T) {
	stop := stopper(t)
	in := krt.NewStaticCollection([]named{{"b", "from-b"}}, krt.WithStop(stop))
	// every input produces the output key "x"
	out := krt.MapCollection(in, func(n named) named { return named{"x", n.Value} }, krt.WithStop(stop))
	waitSynced(t, out)
	r := record(t, out)
	r.expect(t, krt.EventAdd, nil, &named{"x", "from-b"})
	in.Set(named{"a", "from-a"}) // lower input key wins
	r.expect(t, krt.EventUpdate, &named{"x", "from-b"}, &named{"x", "from-a"})
	in.Set(named{"c", "from-c"}) // higher: no change
	in.Set(named{"b", "from-b2"})
	in.Delete("a") // falls through to the next producer, b
	r.expect(t, krt.EventUpdate, &named{"x", "from-a"}, &named{"x", "from-b2"})
	in.Delete("b")
	r.expect(t, krt.EventUpdate, &named{"x", "from-b2"}, &named{"x", "from-c"})
	in.Delete("c")
	r.expect(t, krt.EventDelete, &named{"x", "from-c"}, nil)
}

func TestDerivedSync(t *testing.T) {
	stop := stopper(t)
	primary := krt.NewStaticCollection([]named{{"a", "1"}}, krt.Unsynced(), krt.WithStop(stop))
	dep := krt.NewStaticCollection([]named{{"a", "dep"}}, krt.Unsynced(), krt.WithStop(stop))
	first := krt.NewCollection(primary, func(ctx krt.HandlerContext, n named) *named {
		d := krt.FetchOne(ctx, dep, krt.FilterKey(n.Key))
		if d == nil {
			return &named{n.Key, n.Value}
		}
		return &named{n.Key, n.Value + "+" + d.Value}
	}, krt.WithStop(stop))
	second := krt.MapCollection(first, upper, krt.WithStop(stop))
	reg := second.RegisterBatch(func([]krt.Event[named]) {}, true)

	primary.MarkSynced()
	// Barrier: once b's output is out, first has finished the batch holding
	// primary's sync marker and a's initial run (which fetched dep).
	r := record(t, first)
	r.expect(t, krt.EventAdd, nil, &named{"a", "1+dep"})
	primary.Set(named{"b", "2"})
	r.expect(t, krt.EventAdd, nil, &named{"b", "2"})
	if first.HasSynced() || second.HasSynced() || reg.HasSynced() {
		t.Fatal("synced before the fetched collection synced")
	}
	dep.MarkSynced()
	waitSynced(t, first)
	waitSynced(t, second)
	waitSynced(t, reg)
	if got := second.GetKey("a"); got == nil || got.Value != "1+DEP" {
		t.Fatalf("second[a] = %+v after sync", got)
	}
}

// TestMutualDependencies has two derived collections fetch each other while
// their inputs change concurrently: it must neither deadlock nor race.
func TestMutualDependencies(t *testing.T) {
	stop := stopper(t)
	xs := krt.NewStaticCollection[named](nil, krt.WithStop(stop))
	ys := krt.NewStaticCollection[named](nil, krt.WithStop(stop))
	var a, b krt.Collection[named]
	var ready sync.WaitGroup
	ready.Add(1)
	a = krt.NewCollection(xs, func(ctx krt.HandlerContext, n named) *named {
		ready.Wait()
		peer := krt.FetchOne(ctx, b, krt.FilterKey(n.Key))
		if peer == nil {
			return &named{n.Key, n.Value}
		}
		return &named{n.Key, n.Value + "|" + peer.Value}
	}, krt.WithStop(stop))
	b = krt.NewCollection(ys, func(ctx krt.HandlerContext, n named) *named {
		ready.Wait()
		_ = krt.Fetch(ctx, a) // read only; the output does not depend on a
		return &named{n.Key, n.Value}
	}, krt.WithStop(stop))
	ready.Done()
	var writers sync.WaitGroup
	for _, c := range []krt.StaticCollection[named]{xs, ys} {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range 200 {
				c.Set(named{string(rune('a' + i%10)), string(rune('0' + i%7))})
			}
		}()
	}
	writers.Wait()
	xs.Set(named{"final", "x"})
	ys.Set(named{"final", "y"})
	ra := record(t, a)
	for {
		e := ra.next(t)
		if e.Latest().Key == "final" && e.Latest().Value == "x|y" {
			break
		}
	}
}
