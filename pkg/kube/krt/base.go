package krt

import (
	"slices"
	"sync"
	"sync/atomic"
)

// collectionBase is the store every collection is made of: the objects by
// key, the subscribers, and the synced state.
//
// Consistency contract: a change is applied to the store and handed to every
// subscriber under one write lock, so a subscriber added with the existing
// state sees each change exactly once, after its initial snapshot.
// Subscriber callbacks run with that lock held: they must not block and must
// not call back into this collection (they only queue work or update an
// index under its own lock).
//
// Indexes are fed each change before any subscriber: a subscriber only queues
// the change for a goroutine (a handler, a derived collection) that may run
// at once and read an index, so it must find the change there already.
type collectionBase[T any] struct {
	meta  Metadata
	keyOf func(T) string
	equal func(a, b T) bool
	stop  <-chan struct{}

	mu       sync.RWMutex
	items    map[string]T
	subs     map[uint64]*subscriber[T]
	nextSub  uint64
	indexes  []func([]Event[T]) // fed every change before subs
	synced   atomic.Bool
	syncedCh chan struct{}
	// exited is closed when the collection's goroutine (derived, join,
	// informer) returns.
	exited chan struct{}
	// sorted caches List's order; nil after every change. Written under mu
	// (read lock is enough: every builder computes the same slice).
	sorted atomic.Pointer[[]T]
}

// subscriber receives a collection's changes synchronously, under its lock.
type subscriber[T any] struct {
	onEvents func([]Event[T])
	onSynced func()
}

// change is one requested write: val nil deletes key.
type change[T any] struct {
	key string
	val *T
}

func newBase[T any](meta Metadata, o collectionOptions, keyOf func(T) string, equal func(a, b T) bool) *collectionBase[T] {
	return &collectionBase[T]{
		meta:     meta,
		keyOf:    keyOf,
		equal:    equal,
		stop:     o.stop,
		items:    map[string]T{},
		subs:     map[uint64]*subscriber[T]{},
		syncedCh: make(chan struct{}),
		exited:   make(chan struct{}),
	}
}

func (b *collectionBase[T]) base() *collectionBase[T] { return b }

// Metadata implements Collection.
func (b *collectionBase[T]) Metadata() Metadata { return b.meta }

// GetKey implements Collection.
func (b *collectionBase[T]) GetKey(key string) *T {
	b.mu.RLock()
	v, ok := b.items[key]
	b.mu.RUnlock()
	if !ok {
		return nil
	}
	return &v
}

// List implements Collection.
func (b *collectionBase[T]) List() []T {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if s := b.sorted.Load(); s != nil {
		return slices.Clone(*s)
	}
	keys := make([]string, 0, len(b.items))
	for k := range b.items {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]T, len(keys))
	for i, k := range keys {
		out[i] = b.items[k]
	}
	b.sorted.Store(&out)
	return slices.Clone(out)
}

func (b *collectionBase[T]) len() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.items)
}

func (b *collectionBase[T]) keys() []string {
	b.mu.RLock()
	keys := make([]string, 0, len(b.items))
	for k := range b.items {
		keys = append(keys, k)
	}
	b.mu.RUnlock()
	slices.Sort(keys)
	return keys
}

// HasSynced implements Collection.
func (b *collectionBase[T]) HasSynced() bool { return b.synced.Load() }

// WaitUntilSynced implements Collection.
func (b *collectionBase[T]) WaitUntilSynced(stop <-chan struct{}) bool {
	select {
	case <-b.syncedCh:
		return true
	case <-stop:
		return b.HasSynced()
	}
}

// apply writes changes and emits the resulting events (none for a write of
// an equal object or a delete of an absent key). It returns the events.
func (b *collectionBase[T]) apply(changes []change[T]) []Event[T] {
	if len(changes) == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.applyLocked(changes)
}

// replaceAll makes want the whole content, atomically; keys lists want's
// keys in the order events should follow.
func (b *collectionBase[T]) replaceAll(keys []string, want map[string]T) []Event[T] {
	b.mu.Lock()
	defer b.mu.Unlock()
	changes := make([]change[T], 0, len(keys))
	for _, k := range keys {
		v := want[k]
		changes = append(changes, change[T]{key: k, val: &v})
	}
	var gone []string
	for k := range b.items {
		if _, ok := want[k]; !ok {
			gone = append(gone, k)
		}
	}
	slices.Sort(gone)
	for _, k := range gone {
		changes = append(changes, change[T]{key: k})
	}
	return b.applyLocked(changes)
}

func (b *collectionBase[T]) applyLocked(changes []change[T]) []Event[T] {
	var events []Event[T]
	for _, c := range changes {
		old, had := b.items[c.key]
		switch {
		case c.val == nil && had:
			delete(b.items, c.key)
			events = append(events, Event[T]{Old: &old, Event: EventDelete})
		case c.val == nil:
		case !had:
			b.items[c.key] = *c.val
			events = append(events, Event[T]{New: c.val, Event: EventAdd})
		case !b.equal(old, *c.val):
			b.items[c.key] = *c.val
			events = append(events, Event[T]{Old: &old, New: c.val, Event: EventUpdate})
		}
	}
	if len(events) == 0 {
		return nil
	}
	b.sorted.Store(nil)
	for _, ix := range b.indexes {
		ix(events)
	}
	for _, s := range b.subs {
		s.onEvents(events)
	}
	return events
}

// markSynced flips the collection to synced and tells subscribers.
func (b *collectionBase[T]) markSynced() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.synced.Load() {
		return
	}
	b.synced.Store(true)
	close(b.syncedCh)
	for _, s := range b.subs {
		s.onSynced()
	}
}

// subscribe adds s. With runExisting the current objects are handed to s as
// one batch of adds first. When the collection is (or later becomes) synced,
// s.onSynced is called once after the events that precede it. The returned
// func removes s.
func (b *collectionBase[T]) subscribe(s *subscriber[T], runExisting bool) (cancel func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if runExisting {
		if events := b.existingLocked(); len(events) > 0 {
			s.onEvents(events)
		}
	}
	if b.synced.Load() {
		s.onSynced()
	}
	b.nextSub++
	id := b.nextSub
	b.subs[id] = s
	return func() {
		b.mu.Lock()
		delete(b.subs, id)
		b.mu.Unlock()
	}
}

// addIndex feeds onEvents the current objects, as adds, and then every
// change, each before any subscriber hears of it (see applyLocked). It is
// never removed: an index lives as long as its collection.
func (b *collectionBase[T]) addIndex(onEvents func([]Event[T])) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if events := b.existingLocked(); len(events) > 0 {
		onEvents(events)
	}
	b.indexes = append(b.indexes, onEvents)
}

// existingLocked returns the current objects as adds, sorted by key. The
// caller holds mu.
func (b *collectionBase[T]) existingLocked() []Event[T] {
	if len(b.items) == 0 {
		return nil
	}
	keys := make([]string, 0, len(b.items))
	for k := range b.items {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	events := make([]Event[T], len(keys))
	for i, k := range keys {
		v := b.items[k]
		events[i] = Event[T]{New: &v, Event: EventAdd}
	}
	return events
}

// source is implemented by every collection of this package; the library
// reads and subscribes through it.
type source[T any] interface {
	Collection[T]
	base() *collectionBase[T]
}

// baseOf returns the store of a collection of this package and panics for
// other implementations of Collection.
func baseOf[T any](c Collection[T]) *collectionBase[T] {
	s, ok := c.(source[T])
	if !ok {
		panic("krt: collection " + c.Metadata().Name + " was not built by package krt; " +
			"wrap foreign data in a StaticCollection")
	}
	return s.base()
}
