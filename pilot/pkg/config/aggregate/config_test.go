package aggregate_test

import (
	"errors"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/config/aggregate"
	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

func vs(name, ns, host string) config.Config {
	return config.Config{
		Meta: config.Meta{GroupVersionKind: gvk.VirtualService, Name: name, Namespace: ns},
		Spec: &networking.VirtualService{Hosts: []string{host}},
	}
}

func host(c *config.Config) string {
	if c == nil {
		return "<nil>"
	}
	return c.Spec.(*networking.VirtualService).Hosts[0]
}

type events chan string

func (e events) handler(_, cur config.Config, ev model.Event) { e <- ev.String() + " " + host(&cur) }

func (e events) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-e:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
		return ""
	}
}

func waitSynced(t *testing.T, s *aggregate.Store) {
	t.Helper()
	for _, sc := range s.Schemas().All() {
		stop := make(chan struct{})
		time.AfterFunc(10*time.Second, func() { close(stop) })
		if !s.Collection(sc.GroupVersionKind()).WaitUntilSynced(stop) {
			t.Fatalf("%v not synced", sc.GroupVersionKind())
		}
	}
}

func TestMakeCacheEarlierStoreWins(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	first := memory.New(collection.SchemasFor(collections.VirtualService))
	second := memory.New(collection.SchemasFor(collections.VirtualService, collections.Gateway))
	agg, err := aggregate.MakeCache([]aggregate.CollectionStore{first, second}, aggregate.Options{Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	waitSynced(t, agg)
	if got := agg.Schemas().Kinds(); len(got) != 2 || got[0] != "VirtualService" || got[1] != "Gateway" {
		t.Errorf("schemas = %v", got)
	}
	ev := events(make(chan string, 10))
	agg.RegisterEventHandler(gvk.VirtualService, ev.handler)

	if _, err := second.Create(vs("r", "ns", "from-second")); err != nil {
		t.Fatal(err)
	}
	if got := ev.next(t); got != "add from-second" {
		t.Errorf("event %q", got)
	}
	if _, err := first.Create(vs("r", "ns", "from-first")); err != nil {
		t.Fatal(err)
	}
	if got := ev.next(t); got != "update from-first" {
		t.Errorf("event %q", got)
	}
	if got := host(agg.Get(gvk.VirtualService, "r", "ns")); got != "from-first" {
		t.Errorf("Get = %s", got)
	}
	// a change to the shadowed object is invisible
	if _, err := second.Update(vs("r", "ns", "second-again")); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Create(vs("other", "ns2", "marker")); err != nil {
		t.Fatal(err)
	}
	if got := ev.next(t); got != "add marker" {
		t.Errorf("shadowed update leaked: %q", got)
	}
	// deleting the winner falls through to the next store
	if err := first.Delete(gvk.VirtualService, "r", "ns", nil); err != nil {
		t.Fatal(err)
	}
	if got := ev.next(t); got != "update second-again" {
		t.Errorf("event %q", got)
	}
	if n := len(agg.List(gvk.VirtualService, "ns")); n != 1 {
		t.Errorf("List(ns) = %d", n)
	}
	if n := len(agg.List(gvk.VirtualService, "")); n != 2 {
		t.Errorf("List() = %d", n)
	}
	if _, err := agg.Create(vs("x", "ns", "x")); !errors.Is(err, model.ErrNotWritable) {
		t.Errorf("write on read-only cache: %v", err)
	}
	if agg.Get(gvk.VirtualService_v1alpha3, "r", "ns") != nil {
		t.Error("alias GVK must not resolve in Get")
	}
}

func TestMakeWriteableCacheWritesToWriter(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	reader := memory.New(collection.SchemasFor(collections.VirtualService))
	writer := memory.New(collection.SchemasFor(collections.VirtualService))
	agg, err := aggregate.MakeWriteableCache([]aggregate.CollectionStore{reader, writer}, writer, aggregate.Options{Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	waitSynced(t, agg)
	ev := events(make(chan string, 10))
	agg.RegisterEventHandler(gvk.VirtualService, ev.handler)
	if _, err := agg.Create(vs("w", "ns", "written")); err != nil {
		t.Fatal(err)
	}
	if got := ev.next(t); got != "add written" {
		t.Errorf("event %q", got)
	}
	if writer.Get(gvk.VirtualService, "w", "ns") == nil || reader.Get(gvk.VirtualService, "w", "ns") != nil {
		t.Error("write did not go to the writer only")
	}
	if err := agg.Delete(gvk.VirtualService, "w", "ns", nil); err != nil {
		t.Fatal(err)
	}
	if got := ev.next(t); got != "delete written" {
		t.Errorf("event %q", got)
	}
}

func TestObjectsAreImmutable(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	st := memory.New(collection.SchemasFor(collections.VirtualService))
	in := vs("r", "ns", "orig")
	if _, err := st.Create(in); err != nil {
		t.Fatal(err)
	}
	in.Spec.(*networking.VirtualService).Hosts[0] = "mutated-after-create"
	agg, _ := aggregate.MakeCache([]aggregate.CollectionStore{st}, aggregate.Options{Stop: stop})
	waitSynced(t, agg)
	if got := host(agg.Get(gvk.VirtualService, "r", "ns")); got != "orig" {
		t.Errorf("store shares memory with the caller: %s", got)
	}
	cp := agg.Get(gvk.VirtualService, "r", "ns").DeepCopy()
	cp.Spec.(*networking.VirtualService).Hosts[0] = "changed-copy"
	if got := host(agg.Get(gvk.VirtualService, "r", "ns")); got != "orig" {
		t.Errorf("DeepCopy shares memory with the store: %s", got)
	}
	if _, err := st.Create(config.Config{Meta: config.Meta{GroupVersionKind: gvk.VirtualService, Name: "n"}}); err == nil || err.Error() != "nil spec for n/" {
		t.Errorf("nil spec: %v", err)
	}
}

func TestMakeCacheErrors(t *testing.T) {
	if _, err := aggregate.MakeCache(nil, aggregate.Options{}); err == nil {
		t.Error("no stores accepted")
	}
	if _, err := aggregate.MakeWriteableCache([]aggregate.CollectionStore{memory.New(collections.Pilot)}, nil, aggregate.Options{}); err == nil {
		t.Error("nil writer accepted")
	}
}
