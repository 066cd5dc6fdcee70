package krt_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

func TestEventHelpers(t *testing.T) {
	a, b := named{"k", "a"}, named{"k", "b"}
	cases := []struct {
		e      krt.Event[named]
		name   string
		latest named
		items  int
	}{
		{krt.Event[named]{New: &a, Event: krt.EventAdd}, "add", a, 1},
		{krt.Event[named]{Old: &a, New: &b, Event: krt.EventUpdate}, "update", b, 2},
		{krt.Event[named]{Old: &a, Event: krt.EventDelete}, "delete", a, 1},
	}
	for _, c := range cases {
		if c.e.Event.String() != c.name || c.e.Latest() != c.latest || len(c.e.Items()) != c.items {
			t.Errorf("%v: latest %v items %v", c.e.Event, c.e.Latest(), c.e.Items())
		}
	}
}

func TestStaticEvents(t *testing.T) {
	stop := stopper(t)
	c := krt.NewStaticCollection([]named{{"a", "1"}}, krt.WithStop(stop))
	r := record(t, c)
	r.expect(t, krt.EventAdd, nil, &named{"a", "1"})

	c.Set(named{"b", "1"})
	r.expect(t, krt.EventAdd, nil, &named{"b", "1"})
	c.Set(named{"b", "1"}) // equal: no event
	c.Set(named{"b", "2"})
	r.expect(t, krt.EventUpdate, &named{"b", "1"}, &named{"b", "2"})
	c.Delete("missing") // absent: no event
	c.Delete("a")
	r.expect(t, krt.EventDelete, &named{"a", "1"}, nil)

	if got := c.GetKey("b"); got == nil || got.Value != "2" {
		t.Fatalf("GetKey(b) = %v", got)
	}
	if c.GetKey("a") != nil {
		t.Fatal("GetKey(a) after delete is not nil")
	}

	c.Reset([]named{{"c", "1"}, {"b", "2"}, {"d", "1"}})
	r.expect(t, krt.EventAdd, nil, &named{"c", "1"})
	r.expect(t, krt.EventAdd, nil, &named{"d", "1"})
	c.Reset([]named{{"c", "1"}})
	r.expect(t, krt.EventDelete, &named{"b", "2"}, nil)
	r.expect(t, krt.EventDelete, &named{"d", "1"}, nil)
}

func TestStaticListSorted(t *testing.T) {
	c := krt.NewStaticCollection([]named{{"c", ""}, {"a", ""}, {"b", ""}})
	got := keysOf(c.List(), named.ResourceName)
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("List keys = %v", got)
	}
	l := c.List()
	l[0] = named{"zzz", ""} // the caller's slice: must not affect the collection
	if c.List()[0].Key != "a" {
		t.Fatal("List returned the collection's own slice")
	}
}

func TestStaticSynced(t *testing.T) {
	stop := stopper(t)
	if c := krt.NewStaticCollection[named](nil); !c.HasSynced() {
		t.Fatal("static collection not synced at construction")
	}
	c := krt.NewStaticCollection([]named{{"a", "1"}}, krt.Unsynced(), krt.WithStop(stop))
	reg := c.RegisterBatch(func([]krt.Event[named]) {}, true)
	if c.HasSynced() || reg.HasSynced() {
		t.Fatal("Unsynced collection synced before MarkSynced")
	}
	c.MarkSynced()
	if !c.HasSynced() {
		t.Fatal("not synced after MarkSynced")
	}
	waitSynced(t, reg)
}

func TestRegisterBatchExistingState(t *testing.T) {
	stop := stopper(t)
	c := krt.NewStaticCollection([]named{{"a", "1"}, {"b", "1"}}, krt.WithStop(stop))
	withState := make(chan []krt.Event[named], 10)
	without := make(chan []krt.Event[named], 10)
	r1 := c.RegisterBatch(func(ev []krt.Event[named]) { withState <- ev }, true)
	r2 := c.RegisterBatch(func(ev []krt.Event[named]) { without <- ev }, false)
	waitSynced(t, r1)
	waitSynced(t, r2)
	c.Set(named{"c", "1"})

	first := <-withState
	if len(first) != 2 || first[0].New.Key != "a" || first[1].New.Key != "b" {
		t.Fatalf("initial batch = %+v", first)
	}
	for name, ch := range map[string]chan []krt.Event[named]{"with": withState, "without": without} {
		select {
		case b := <-ch:
			if len(b) != 1 || b[0].New.Key != "c" || b[0].Event != krt.EventAdd {
				t.Fatalf("%s: batch after Set = %+v", name, b)
			}
		case <-time.After(timeout):
			t.Fatalf("%s: no batch after Set", name)
		}
	}
}

func TestUnregisterStopsDelivery(t *testing.T) {
	stop := stopper(t)
	c := krt.NewStaticCollection[named](nil, krt.WithStop(stop))
	r := record(t, c)
	c.Set(named{"a", "1"})
	r.expect(t, krt.EventAdd, nil, &named{"a", "1"})
	r.reg.UnregisterHandler()
	r.reg.UnregisterHandler() // idempotent
	waitClosed(t, krt.Exited(r.reg), "handler goroutine")
	c.Set(named{"b", "1"})
	if len(r.ch) != 0 {
		t.Fatalf("event after UnregisterHandler: %+v", <-r.ch)
	}
}

func TestKeys(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	if k := krt.NewStaticCollection([]*corev1.ConfigMap{cm}).List(); len(k) != 1 {
		t.Fatal("configmap not stored")
	}
	if krt.NewStaticCollection([]*corev1.ConfigMap{cm}).GetKey("ns/cm") == nil {
		t.Fatal("metav1.Object not keyed namespace/name")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}
	if krt.NewStaticCollection([]*corev1.Namespace{ns}).GetKey("ns") == nil {
		t.Fatal("cluster-scoped object not keyed by name")
	}
	cfg := config.Config{Meta: config.Meta{Namespace: "ns", Name: "vs"}}
	if krt.NewStaticCollection([]config.Config{cfg}).GetKey("ns/vs") == nil {
		t.Fatal("config.Config not keyed namespace/name")
	}
	if krt.NewStaticCollection([]*config.Config{&cfg}).GetKey("ns/vs") == nil {
		t.Fatal("*config.Config not keyed namespace/name")
	}
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "ResourceNamer") {
			t.Fatalf("want a panic naming ResourceNamer, got %v", r)
		}
	}()
	krt.NewStaticCollection([]struct{ A int }{{1}})
}

func TestConfigEqualsUsed(t *testing.T) {
	stop := stopper(t)
	cfg := config.Config{Meta: config.Meta{Namespace: "ns", Name: "vs", Labels: map[string]string{}}}
	c := krt.NewStaticCollection([]config.Config{cfg}, krt.WithStop(stop))
	r := record(t, c)
	r.expect(t, krt.EventAdd, nil, &cfg)
	c.Set(cfg.DeepCopy()) // equal by Equals
	changed := cfg.DeepCopy()
	changed.Labels = map[string]string{"a": "b"}
	c.Set(changed)
	if e := r.next(t); e.Event != krt.EventUpdate || e.New.Labels["a"] != "b" {
		t.Fatalf("got %v %+v, want the labels update", e.Event, e.New)
	}
}
