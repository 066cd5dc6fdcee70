package krt

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"sync"
)

// DefaultDebugKeys caps the output keys and inputs listed per collection.
const DefaultDebugKeys = 200

// DebugHandler is the registry behind /debug/krtz. Collections built with
// WithDebugging(h) register themselves. It is safe for concurrent use; the
// zero value is ready.
type DebugHandler struct {
	mu          sync.Mutex
	collections []Debuggable
	// scoped are the handlers of Until listed with this one
	scoped []*DebugHandler
	// MaxKeys caps listed keys and inputs per collection (0: DefaultDebugKeys).
	MaxKeys int
}

// Debuggable is what DebugHandler.Register accepts: every collection of this
// package (and a Singleton's AsCollection()).
type Debuggable interface {
	Metadata() Metadata
}

// snapshotter is implemented by the collections of this package.
type snapshotter interface {
	debugSnapshot(maxKeys int) CollectionSnapshot
}

// CollectionSnapshot is the state of one collection at one moment.
type CollectionSnapshot struct {
	Name   string `json:"name"`
	Type   Kind   `json:"type"`
	Synced bool   `json:"synced"`
	// Outputs is the number of objects; Keys lists them, capped.
	Outputs       int      `json:"outputs"`
	Keys          []string `json:"keys,omitempty"`
	KeysTruncated bool     `json:"keysTruncated,omitempty"`
	// Derived collections: what each input fetched, as "collection{filter}"
	// (capped), the collections fetched by any input, the number of
	// transform runs, and the output keys produced by several inputs.
	Inputs       map[string][]string `json:"inputs,omitempty"`
	Dependencies []string            `json:"dependencies,omitempty"`
	Transforms   int64               `json:"transforms,omitempty"`
	Conflicts    []string            `json:"conflicts,omitempty"`
	Error        string              `json:"error,omitempty"`
}

// NewDebugHandler returns an empty registry.
func NewDebugHandler() *DebugHandler { return &DebugHandler{} }

// Register adds a collection. Registering one twice lists it once.
func (h *DebugHandler) Register(c Debuggable) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, have := range h.collections {
		if have.Metadata().ID == c.Metadata().ID {
			return
		}
	}
	h.collections = append(h.collections, c)
}

// RegisterUntil registers c until stop closes (nil: for good): the
// collections of a remote cluster leave the listing, and the handler lets
// go of them, when the cluster stops.
func (h *DebugHandler) RegisterUntil(c Debuggable, stop <-chan struct{}) {
	h.Register(c)
	if stop == nil {
		return
	}
	go func() {
		<-stop
		h.mu.Lock()
		defer h.mu.Unlock()
		id := c.Metadata().ID
		h.collections = slices.DeleteFunc(h.collections, func(have Debuggable) bool { return have.Metadata().ID == id })
	}()
}

// Until returns a handler whose collections h lists until stop closes
// (nil: for good): then h drops them all at once, and lets go of them,
// whether they were built with a stop of their own or not. A remote
// cluster's components register with Until(cluster stop), so that
// nothing of a removed cluster stays on /debug/krtz (or in memory
// through it).
func (h *DebugHandler) Until(stop <-chan struct{}) *DebugHandler {
	child := &DebugHandler{}
	h.mu.Lock()
	h.scoped = append(h.scoped, child)
	h.mu.Unlock()
	if stop == nil {
		return child
	}
	go func() {
		<-stop
		h.mu.Lock()
		defer h.mu.Unlock()
		h.scoped = slices.DeleteFunc(h.scoped, func(c *DebugHandler) bool { return c == child })
	}()
	return child
}

// all is every collection of h and of its live scoped handlers.
func (h *DebugHandler) all() []Debuggable {
	h.mu.Lock()
	cs := slices.Clone(h.collections)
	scoped := slices.Clone(h.scoped)
	h.mu.Unlock()
	for _, child := range scoped {
		cs = append(cs, child.all()...)
	}
	return cs
}

// Snapshot returns the state of every registered collection, sorted by name.
func (h *DebugHandler) Snapshot() []CollectionSnapshot {
	cs := h.all()
	h.mu.Lock()
	maxKeys := h.MaxKeys
	h.mu.Unlock()
	if maxKeys <= 0 {
		maxKeys = DefaultDebugKeys
	}
	out := make([]CollectionSnapshot, 0, len(cs))
	for _, c := range cs {
		if s, ok := c.(snapshotter); ok {
			out = append(out, s.debugSnapshot(maxKeys))
		} else {
			m := c.Metadata()
			out = append(out, CollectionSnapshot{Name: m.Name, Type: m.Kind})
		}
	}
	slices.SortStableFunc(out, func(a, b CollectionSnapshot) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// MarshalJSON renders Snapshot.
func (h *DebugHandler) MarshalJSON() ([]byte, error) {
	return json.Marshal(h.Snapshot())
}

// ServeHTTP serves Snapshot as indented JSON.
func (h *DebugHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(h.Snapshot())
}

func baseSnapshot[T any](b *collectionBase[T], maxKeys int) CollectionSnapshot {
	keys := b.keys()
	s := CollectionSnapshot{Name: b.meta.Name, Type: b.meta.Kind, Synced: b.HasSynced(), Outputs: len(keys)}
	if len(keys) > maxKeys {
		keys, s.KeysTruncated = keys[:maxKeys], true
	}
	s.Keys = keys
	return s
}

func (d *derivedCollection[I, O]) debugSnapshot(maxKeys int) CollectionSnapshot {
	s := baseSnapshot(d.collectionBase, maxKeys)
	s.Transforms = d.runs.Load()
	d.stateMu.RLock()
	defer d.stateMu.RUnlock()
	deps := map[string]struct{}{}
	s.Inputs = map[string][]string{}
	for _, in := range slices.Sorted(maps.Keys(d.inputs)) {
		var fetched []string
		for _, r := range d.inputs[in].records {
			deps[r.dep.name] = struct{}{}
			fetched = append(fetched, r.dep.name+"{"+r.filter.String()+"}")
		}
		if len(s.Inputs) < maxKeys {
			s.Inputs[in] = fetched
		}
	}
	s.Dependencies = slices.Sorted(maps.Keys(deps))
	for out, owners := range d.owners {
		if len(owners) > 1 {
			s.Conflicts = append(s.Conflicts, out)
		}
	}
	slices.Sort(s.Conflicts)
	return s
}

func (j *joinCollection[T]) debugSnapshot(maxKeys int) CollectionSnapshot {
	s := baseSnapshot(j.collectionBase, maxKeys)
	for _, in := range j.inputs {
		s.Dependencies = append(s.Dependencies, in.meta.Name)
	}
	return s
}

func (s singleton[T]) debugSnapshot(maxKeys int) CollectionSnapshot {
	if d, ok := s.c.(snapshotter); ok {
		return d.debugSnapshot(maxKeys)
	}
	return CollectionSnapshot{}
}

func (s singleton[T]) Metadata() Metadata { return s.c.Metadata() }
