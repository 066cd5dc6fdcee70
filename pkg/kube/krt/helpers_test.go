package krt_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/meshplane/istiod/pkg/kube/krt"
)

// timeout only guards against a hung test; no test waits for it to pass.
const timeout = 10 * time.Second

type pod struct {
	Name, Namespace string
	Labels          map[string]string
	Service         string // name of the service in the same namespace
	IP              string
}

func (p pod) ResourceName() string         { return p.Namespace + "/" + p.Name }
func (p pod) GetNamespace() string         { return p.Namespace }
func (p pod) GetLabels() map[string]string { return p.Labels }

type service struct {
	Name, Namespace string
	Selector        map[string]string
	VIP             string
}

func (s service) ResourceName() string           { return s.Namespace + "/" + s.Name }
func (s service) GetSelector() map[string]string { return s.Selector }

// podInfo is a pod joined with its service.
type podInfo struct {
	Pod, IP, VIP string
}

func (p podInfo) ResourceName() string { return p.Pod }

type named struct {
	Key, Value string
}

func (n named) ResourceName() string { return n.Key }

// stopper returns a stop channel closed when the test ends.
func stopper(t testing.TB) chan struct{} {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	return stop
}

// recorder collects the events of a registration.
type recorder[T any] struct {
	ch  chan krt.Event[T]
	reg krt.HandlerRegistration
}

func record[T any](t testing.TB, c krt.Collection[T]) *recorder[T] {
	r := &recorder[T]{ch: make(chan krt.Event[T], 100000)}
	r.reg = c.Register(func(e krt.Event[T]) { r.ch <- e })
	t.Cleanup(r.reg.UnregisterHandler)
	return r
}

func (r *recorder[T]) next(t testing.TB) krt.Event[T] {
	t.Helper()
	select {
	case e := <-r.ch:
		return e
	case <-time.After(timeout):
		t.Fatal("timed out waiting for an event")
	}
	panic("unreachable")
}

// expect reads the next event and checks its type and sides.
func (r *recorder[T]) expect(t testing.TB, typ krt.EventType, old, new *T) {
	t.Helper()
	e := r.next(t)
	if e.Event != typ || !samePtr(e.Old, old) || !samePtr(e.New, new) {
		t.Fatalf("got event %v old=%s new=%s; want %v old=%s new=%s",
			e.Event, show(e.Old), show(e.New), typ, show(old), show(new))
	}
}

func samePtr[T any](a, b *T) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return fmt.Sprint(*a) == fmt.Sprint(*b)
}

func show[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprintf("%+v", *p)
}

func ptr[T any](v T) *T { return &v }

func waitSynced(t testing.TB, c interface {
	WaitUntilSynced(<-chan struct{}) bool
}) {
	t.Helper()
	stop := make(chan struct{})
	timer := time.AfterFunc(timeout, func() { close(stop) })
	defer timer.Stop()
	if !c.WaitUntilSynced(stop) {
		t.Fatal("timed out waiting for sync")
	}
}

func waitClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(timeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func keysOf[T any](items []T, key func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = key(it)
	}
	return out
}

func labels(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return maps.Clone(m)
}

func timeAfterTimeout() <-chan time.Time { return time.After(timeout) }
