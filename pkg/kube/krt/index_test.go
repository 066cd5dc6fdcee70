package krt_test

import (
	"slices"
	"testing"

	"github.com/meshplane/istiod/pkg/kube/krt"
)

func TestNamespaceIndex(t *testing.T) {
	pods := krt.NewStaticCollection([]pod{
		{Name: "a", Namespace: "ns1"},
		{Name: "b", Namespace: "ns1"},
		{Name: "c", Namespace: "ns2"},
	})
	idx := krt.NewNamespaceIndex[pod](pods)
	lookup := func(ns string) []string { return keysOf(idx.Lookup(ns), pod.ResourceName) }
	if got := lookup("ns1"); !slices.Equal(got, []string{"ns1/a", "ns1/b"}) {
		t.Fatalf("ns1 = %v", got)
	}
	pods.Set(pod{Name: "d", Namespace: "ns2"})
	pods.Delete("ns1/a")
	if got := lookup("ns1"); !slices.Equal(got, []string{"ns1/b"}) {
		t.Fatalf("ns1 after delete = %v", got)
	}
	if got := lookup("ns2"); !slices.Equal(got, []string{"ns2/c", "ns2/d"}) {
		t.Fatalf("ns2 after add = %v", got)
	}
	if got := lookup("none"); len(got) != 0 {
		t.Fatalf("none = %v", got)
	}
}

func TestIndexMovesOnUpdate(t *testing.T) {
	pods := krt.NewStaticCollection([]pod{{Name: "a", Namespace: "ns", Labels: labels("app", "x")}})
	idx := krt.NewIndex(pods, func(p pod) []string { return []string{p.Labels["app"]} })
	pods.Set(pod{Name: "a", Namespace: "ns", Labels: labels("app", "y"), IP: "1.1.1.1"})
	if got := idx.Lookup("x"); len(got) != 0 {
		t.Fatalf("x after move = %v", got)
	}
	if got := idx.Lookup("y"); len(got) != 1 || got[0].IP != "1.1.1.1" {
		t.Fatalf("y after move = %+v", got)
	}
}

func TestIndexOverDerived(t *testing.T) {
	stop := stopper(t)
	in := krt.NewStaticCollection([]named{{"a", "g1"}, {"b", "g1"}}, krt.WithStop(stop))
	out := krt.MapCollection(in, upper, krt.WithStop(stop))
	idx := krt.NewIndex(out, func(n named) []string { return []string{n.Value} })
	r := record(t, out)
	r.next(t)
	r.next(t)
	if got := keysOf(idx.Lookup("G1"), named.ResourceName); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("G1 = %v", got)
	}
	in.Set(named{"a", "g2"})
	r.next(t) // the index is updated before handlers see the event
	if got := keysOf(idx.Lookup("G2"), named.ResourceName); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("G2 = %v", got)
	}
	if got := keysOf(idx.Lookup("G1"), named.ResourceName); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("G1 = %v", got)
	}
}
