package krt_test

import (
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshplane/istiod/pkg/kube/krt"
)

func TestStopEndsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	stop := make(chan struct{})
	in := krt.NewStaticCollection([]named{{"a", "1"}}, krt.WithStop(stop))
	derived := krt.NewCollection(in, func(ctx krt.HandlerContext, n named) *named {
		krt.Fetch(ctx, in)
		return &n
	}, krt.WithStop(stop))
	join := krt.JoinCollection([]krt.Collection[named]{in, derived}, krt.WithStop(stop))
	single := krt.NewSingleton(func(ctx krt.HandlerContext) *named { return krt.FetchOne(ctx, join) }, krt.WithStop(stop))
	reg := in.Register(func(krt.Event[named]) {})
	informer, _ := configMapInformer(fake.NewClientset())
	cms := krt.WrapClient[*corev1.ConfigMap](informer, krt.WithStop(stop)) // never started: waits for sync
	waitSynced(t, single.AsCollection())
	if runtime.NumGoroutine() <= before {
		t.Fatal("no goroutine started")
	}

	close(stop)
	for name, c := range map[string]any{
		"derived": derived, "join": join, "singleton": single.AsCollection(), "handler": reg, "informer": cms,
	} {
		waitClosed(t, krt.Exited(c), name+" goroutine")
	}
	// A registration made after stop has no goroutine left running.
	late := in.Register(func(krt.Event[named]) {})
	waitClosed(t, krt.Exited(late), "late handler goroutine")
}

func TestDebugHandler(t *testing.T) {
	stop := stopper(t)
	dbg := krt.NewDebugHandler()
	opts := func(name string) []krt.CollectionOption {
		return []krt.CollectionOption{krt.WithName(name), krt.WithStop(stop), krt.WithDebugging(dbg)}
	}
	services := krt.NewStaticCollection([]service{{Name: "s1", Namespace: "ns", VIP: "1"}}, opts("services")...)
	pods := krt.NewStaticCollection([]pod{{Name: "p1", Namespace: "ns", Service: "s1"}}, opts("pods")...)
	infos := krt.NewCollection(pods, podsToInfo(&counter{}, services), opts("pod-infos")...)
	pending := krt.NewStaticCollection[named](nil, append(opts("pending"), krt.Unsynced())...)
	waitSynced(t, infos)

	snap := dbg.Snapshot()
	names := keysOf(snap, func(s krt.CollectionSnapshot) string { return s.Name })
	if !slices.Equal(names, []string{"pending", "pod-infos", "pods", "services"}) {
		t.Fatalf("names = %v", names)
	}
	byName := map[string]krt.CollectionSnapshot{}
	for _, s := range snap {
		byName[s.Name] = s
	}
	if s := byName["pending"]; s.Synced || s.Type != krt.KindStatic {
		t.Fatalf("pending = %+v", s)
	}
	d := byName["pod-infos"]
	if !d.Synced || d.Type != krt.KindDerived || d.Outputs != 1 || !slices.Equal(d.Keys, []string{"ns/p1"}) {
		t.Fatalf("pod-infos = %+v", d)
	}
	if !slices.Equal(d.Dependencies, []string{"services"}) || !slices.Equal(d.Inputs["ns/p1"], []string{"services{key=ns/s1}"}) {
		t.Fatalf("pod-infos dependencies = %v inputs = %v", d.Dependencies, d.Inputs)
	}
	raw, err := json.Marshal(dbg)
	if err != nil || !strings.Contains(string(raw), `"name":"pod-infos"`) || !strings.Contains(string(raw), `"type":"derived"`) {
		t.Fatalf("JSON = %s, %v", raw, err)
	}
	pending.MarkSynced()
	for _, s := range dbg.Snapshot() {
		if s.Name == "pending" && !s.Synced {
			t.Fatal("pending not synced after MarkSynced")
		}
	}
}
