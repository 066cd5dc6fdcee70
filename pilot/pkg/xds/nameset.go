package xds

import (
	"hash/maphash"
	"maps"
	"runtime"
	"sync"
	"unique"
	"weak"
)

// nameSet is a subscription: the names a connection watches of one type.
// It is immutable and shared by every connection that subscribes to the
// same names: sidecars of one scope ask for the load assignments of the
// same thousands of clusters, and their connections point at one set
// instead of each keeping a map of them. nil is the empty set.
type nameSet struct {
	m   map[string]struct{}
	sum uint64 // name hashes summed (order-free)
	// handles keep the names canonical while the set lives (see intern)
	handles []unique.Handle[string]
}

// all is the set as a map, read-only (nil when empty).
func (s *nameSet) all() map[string]struct{} {
	if s == nil {
		return nil
	}
	return s.m
}

var nameSeed = maphash.MakeSeed()

// nameSets interns subscriptions by content. Entries are weak: a set no
// connection holds any more is collected, and its entry goes with it.
type nameSets struct {
	mu sync.Mutex
	m  map[uint64][]weak.Pointer[nameSet]
}

var watchedSets nameSets

// candidates are the live sets with this sum.
func (t *nameSets) candidates(sum uint64) []*nameSet {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*nameSet
	for _, p := range t.m[sum] {
		if s := p.Value(); s != nil {
			out = append(out, s)
		}
	}
	return out
}

// intern returns the shared set equal to m (nil when it is empty),
// adopting m when there is none; the caller gives m up.
func (t *nameSets) intern(m map[string]struct{}) *nameSet {
	if len(m) == 0 {
		return nil
	}
	var sum uint64
	for n := range m {
		sum += maphash.String(nameSeed, n)
	}
	for _, c := range t.candidates(sum) {
		if maps.Equal(c.m, m) {
			return c
		}
	}
	s := &nameSet{m: m, sum: sum, handles: make([]unique.Handle[string], 0, len(m))}
	for n := range m {
		h := unique.Make(n)
		s.handles = append(s.handles, h)
		// the key becomes the handle's copy (a string key is replaced on
		// assignment): the name was interned without a handle, and a
		// collection since may have dropped that copy from the runtime's map
		m[h.Value()] = struct{}{}
	}
	t.mu.Lock()
	if t.m == nil {
		t.m = map[uint64][]weak.Pointer[nameSet]{}
	}
	t.m[sum] = append(t.m[sum], weak.Make(s))
	t.mu.Unlock()
	runtime.AddCleanup(s, t.sweep, sum)
	return s
}

// sweep drops the collected sets of a sum.
func (t *nameSets) sweep(sum uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	live := t.m[sum][:0]
	for _, p := range t.m[sum] {
		if p.Value() != nil {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		delete(t.m, sum)
		return
	}
	t.m[sum] = live
}
