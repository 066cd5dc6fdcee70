package xds

import (
	"fmt"
	"maps"
	"math/rand"
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// referenceAfter is what a client holds after a push, computed the plain
// way: every generated resource at its version (the later of a name
// twice), and the held ones it had at the version it had.
func referenceAfter(rs []*discovery.Resource, sent map[string]string, held map[string]string) map[string]string {
	out := map[string]string{}
	for _, r := range rs {
		out[r.Name] = r.Version
	}
	for h := range held {
		if v, ok := sent[h]; ok {
			out[h] = v
		}
	}
	return out
}

func collect(s *sentVersions) map[string]string {
	out := map[string]string{}
	for n, v := range s.all() {
		if _, dup := out[n]; dup {
			panic("name yielded twice: " + n)
		}
		out[n] = v
	}
	return out
}

// Whatever base a set is built on, it holds exactly what the plain
// computation says, through get and all: connections of a group that
// share most resources, differ in a few, lose some, hold some and repeat
// names.
func TestSentVersionsMatchPlainMaps(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	names := make([]string, 300)
	for i := range names {
		names[i] = fmt.Sprintf("outbound|80||svc-%d", i)
	}
	const conns = 12
	var bases sentBases
	for c := 0; c < conns; c++ {
		bases.join(sentScope{"sidecar", fmt.Sprintf("ns-%d", c%2)})
	}
	sent := make([]*sentVersions, conns)
	plain := make([]map[string]string, conns)
	for round := 0; round < 60; round++ {
		// most connections see the same resources at a round's versions
		shared := map[string]string{}
		for _, n := range names[:200+r.Intn(100)] {
			shared[n] = fmt.Sprintf("v%d", r.Intn(3))
		}
		for c := 0; c < conns; c++ {
			var rs []*discovery.Resource
			for _, n := range names {
				v, ok := shared[n]
				switch {
				case r.Intn(40) == 0: // this one differs
					v, ok = "own-"+fmt.Sprint(c), true
				case r.Intn(60) == 0: // or lacks it
					ok = false
				}
				if ok {
					rs = append(rs, &discovery.Resource{Name: n, Version: v})
				}
			}
			if r.Intn(10) == 0 && len(rs) > 0 {
				rs = append(rs, &discovery.Resource{Name: rs[0].Name, Version: "dup"})
			}
			if r.Intn(7) == 0 { // a very different client
				rs = rs[:r.Intn(len(rs)+1)]
			}
			held := map[string]string{}
			for i := r.Intn(4); i > 0; i-- {
				held[names[r.Intn(len(names))]] = "invalid"
			}
			version := resourceVersions(rs)
			want := referenceAfter(rs, plain[c], held)
			got := bases.after(sentScope{"sidecar", fmt.Sprintf("ns-%d", c%2)}, ClusterType, rs, version, sent[c], held)
			if g := collect(got); !maps.Equal(g, want) {
				t.Fatalf("round %d conn %d: holds %d entries, want %d", round, c, len(g), len(want))
			}
			for _, n := range append(names, "absent") {
				v, ok := got.get(n)
				w, wok := want[n]
				if ok != wok || v != w {
					t.Fatalf("round %d conn %d: get(%s) = %q %v, want %q %v", round, c, n, v, ok, w, wok)
				}
			}
			sent[c], plain[c] = got, want
		}
	}
	// most sets share a base and keep only a few entries of their own
	small := 0
	for _, s := range sent {
		if s != nil && s.base != nil && len(s.own) <= maxOwn(s.base) {
			small++
		}
	}
	if small < conns/2 {
		t.Errorf("only %d of %d sets are built on a shared base", small, conns)
	}
}

func TestSentVersionsWithout(t *testing.T) {
	var bases sentBases
	s := bases.after(sentScope{"sidecar", "ns"}, EndpointType, []*discovery.Resource{{Name: "a", Version: "1"}, {Name: "b", Version: "2"}}, func(i int) string { return []string{"1", "2"}[i] }, nil, nil)
	w := s.without([]string{"a", "x"})
	if got := collect(w); !maps.Equal(got, map[string]string{"b": "2"}) {
		t.Errorf("without a: %v", got)
	}
	if got := collect(s); !maps.Equal(got, map[string]string{"a": "1", "b": "2"}) {
		t.Errorf("the original changed: %v", got)
	}
}

// A partial push changes the versions of what it carries and keeps the
// rest: through many partial pushes, on a shared base and past the point
// where the set is rebuilt, the set holds what the plain computation says.
func TestSentVersionsAfterPartialPushes(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	names := make([]string, 200)
	for i := range names {
		names[i] = fmt.Sprintf("outbound|80||svc-%d", i)
	}
	var bases sentBases
	sc := sentScope{"sidecar", "ns"}
	bases.join(sc)
	var whole []*discovery.Resource
	plain := map[string]string{}
	for _, n := range names {
		whole = append(whole, &discovery.Resource{Name: n, Version: "v0"})
		plain[n] = "v0"
	}
	sent := bases.after(sc, EndpointType, whole, resourceVersions(whole), nil, nil)
	rebuilt := false
	for round := 1; round <= 80; round++ {
		var rs []*discovery.Resource
		for i := r.Intn(6); i >= 0; i-- {
			n := names[r.Intn(len(names))]
			v := fmt.Sprintf("v%d", round)
			if r.Intn(5) == 0 {
				v = plain[n] // sent again unchanged
			}
			rs = append(rs, &discovery.Resource{Name: n, Version: v})
			plain[n] = v
		}
		before := sent
		sent = bases.afterPartial(sc, EndpointType, rs, resourceVersions(rs), sent)
		if sent.base != before.base {
			rebuilt = true
		}
		if got := collect(sent); !maps.Equal(got, plain) {
			t.Fatalf("round %d: holds %d entries, want %d", round, len(got), len(plain))
		}
		for _, n := range names {
			if v, ok := sent.get(n); !ok || v != plain[n] {
				t.Fatalf("round %d: get(%s) = %q %v, want %q", round, n, v, ok, plain[n])
			}
		}
		if len(sent.own) > maxOwn(sent.base) {
			t.Fatalf("round %d: %d own entries on a base of %d", round, len(sent.own), sent.base.len())
		}
	}
	if !rebuilt {
		t.Error("80 rounds of changes never rebuilt the set on a new base")
	}
	if got := bases.afterPartial(sc, EndpointType, nil, resourceVersions(nil), sent); got != sent {
		t.Error("an empty partial push changed the set")
	}
}
