package krt

import (
	"slices"
	"sync"
)

// index maps secondary keys to objects. It is updated synchronously from the
// collection's changes (under the collection's lock), so once a write to the
// collection returns, Lookup reflects it; and it is updated before any
// subscriber is told of a change, so a handler (or derived collection)
// handling an event finds that event's change in Lookup.
type index[K comparable, T any] struct {
	keyOf   func(T) string
	extract func(T) []K

	mu      sync.RWMutex
	objects map[K]map[string]T
	indexed map[string][]K // object key → index keys it is under
}

var _ Index[string, int] = (*index[string, int])(nil)

// NewIndex indexes c by the keys extract returns for each object (extract
// must be pure). It lives as long as c.
func NewIndex[K comparable, T any](c Collection[T], extract func(T) []K) Index[K, T] {
	b := baseOf(c)
	idx := &index[K, T]{
		keyOf:   b.keyOf,
		extract: extract,
		objects: map[K]map[string]T{},
		indexed: map[string][]K{},
	}
	b.addIndex(idx.onEvents)
	return idx
}

// NewNamespaceIndex indexes c by namespace (see FilterNamespace for how the
// namespace of an object is read).
func NewNamespaceIndex[T any](c Collection[T]) Index[string, T] {
	keyOf := baseOf(c).keyOf
	return NewIndex(c, func(o T) []string { return []string{namespaceOf(o, keyOf(o))} })
}

func (x *index[K, T]) onEvents(events []Event[T]) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, e := range events {
		key := x.keyOf(e.Latest())
		for _, k := range x.indexed[key] {
			if m := x.objects[k]; m != nil {
				delete(m, key)
				if len(m) == 0 {
					delete(x.objects, k)
				}
			}
		}
		delete(x.indexed, key)
		if e.New == nil {
			continue
		}
		ks := x.extract(*e.New)
		for _, k := range ks {
			m := x.objects[k]
			if m == nil {
				m = map[string]T{}
				x.objects[k] = m
			}
			m[key] = *e.New
		}
		if len(ks) > 0 {
			x.indexed[key] = ks
		}
	}
}

// Lookup implements Index.
func (x *index[K, T]) Lookup(k K) []T {
	x.mu.RLock()
	m := x.objects[k]
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	out := make([]T, len(keys))
	for i, key := range keys {
		out[i] = m[key]
	}
	x.mu.RUnlock()
	return out
}
