package krt

// This file holds the core interfaces of the library. Every constructor lives
// in its own file; the shared machinery is in base.go (store and subscribers)
// and handler.go (handler registrations).

// EventType says what happened to an object.
type EventType int

const (
	// EventAdd reports a new key: Event.New is set, Event.Old is nil.
	EventAdd EventType = iota
	// EventUpdate reports a changed object: both Old and New are set.
	EventUpdate
	// EventDelete reports a removed key: Event.Old is set, Event.New is nil.
	EventDelete
)

// String renders the event type as "add", "update" or "delete".
func (e EventType) String() string {
	switch e {
	case EventAdd:
		return "add"
	case EventUpdate:
		return "update"
	case EventDelete:
		return "delete"
	}
	return "unknown"
}

// Event is one change of one key of a collection. The pointed-to values are
// shared with the collection and other handlers: read-only.
type Event[T any] struct {
	Old   *T
	New   *T
	Event EventType
}

// Latest returns New when set, else Old.
func (e Event[T]) Latest() T {
	if e.New != nil {
		return *e.New
	}
	return *e.Old
}

// Items returns the sides of the event that are set (Old first).
func (e Event[T]) Items() []T {
	out := make([]T, 0, 2)
	if e.Old != nil {
		out = append(out, *e.Old)
	}
	if e.New != nil {
		out = append(out, *e.New)
	}
	return out
}

// HandlerRegistration is the handle of a registered event handler.
type HandlerRegistration interface {
	// HasSynced reports whether the collection has synced and every event
	// queued for this handler before that point has been delivered.
	HasSynced() bool
	// WaitUntilSynced blocks until HasSynced is true (returns true) or stop
	// closes (returns false).
	WaitUntilSynced(stop <-chan struct{}) bool
	// UnregisterHandler stops deliveries; a call in progress completes. It is
	// safe to call more than once and from inside the handler.
	UnregisterHandler()
}

// Collection is a keyed, read-only set of objects that reports its changes.
type Collection[T any] interface {
	// GetKey returns the object with this key, or nil when absent. The value
	// is shared with the collection: read-only.
	GetKey(key string) *T
	// List returns every object sorted by key. The slice is the caller's; the
	// values are shared: read-only.
	List() []T
	// Register calls f for each existing object (as adds) and then for every
	// change, one event at a time, from a goroutine owned by the registration.
	Register(f func(Event[T])) HandlerRegistration
	// RegisterBatch calls f with batches of events; with runExistingState the
	// first batch holds the current objects as adds. f must not modify the
	// slice: it is shared with other handlers.
	RegisterBatch(f func(events []Event[T]), runExistingState bool) HandlerRegistration
	// HasSynced reports whether the collection holds its initial state (see
	// doc.go for each kind of collection).
	HasSynced() bool
	// WaitUntilSynced blocks until HasSynced is true (returns true) or stop
	// closes (returns false).
	WaitUntilSynced(stop <-chan struct{}) bool
	// Metadata describes the collection (name, kind).
	Metadata() Metadata
}

// Singleton is a collection of at most one object.
type Singleton[T any] interface {
	// Get returns the object, or nil when there is none. Read-only.
	Get() *T
	// Register calls f with the current object (as an add) and every change.
	Register(f func(Event[T])) HandlerRegistration
	// AsCollection exposes the singleton as a collection of zero or one
	// object under a fixed key, e.g. to Fetch it from a transform.
	AsCollection() Collection[T]
}

// StaticCollection is a collection whose content is set by its owner.
type StaticCollection[T any] interface {
	Collection[T]
	// Set adds or replaces the object under its key. No event when an equal
	// object is already there.
	Set(obj T)
	// Delete removes the object with this key, if any.
	Delete(key string)
	// Reset replaces the whole content; the difference is emitted as events.
	Reset(objs []T)
	// MarkSynced marks a collection created with Unsynced() as synced.
	MarkSynced()
}

// StaticSingleton is a singleton whose value is set by its owner.
type StaticSingleton[T any] interface {
	Singleton[T]
	// Set replaces the value (copied); nil removes it.
	Set(obj *T)
	// MarkSynced marks a singleton created with Unsynced() as synced.
	MarkSynced()
}

// Index answers lookups by a secondary key without scanning the collection.
type Index[K comparable, T any] interface {
	// Lookup returns the objects indexed under k, sorted by object key.
	// Read-only values.
	Lookup(k K) []T
}

// ResourceNamer lets a type name its own key.
type ResourceNamer interface {
	ResourceName() string
}

// LabelSelectorer is implemented by objects that select others by labels;
// FilterSelects uses it.
type LabelSelectorer interface {
	GetSelector() map[string]string
}

// Kind is the kind of a collection as shown by Metadata and /debug/krtz.
type Kind string

// The kinds of collections.
const (
	KindStatic    Kind = "static"
	KindInformer  Kind = "informer"
	KindDerived   Kind = "derived"
	KindJoin      Kind = "join"
	KindSingleton Kind = "singleton"
)

// Metadata describes a collection.
type Metadata struct {
	// Name is the WithName option, or a generated "<kind>[<type>]#<id>".
	Name string
	// Kind is static, informer, derived, join or singleton.
	Kind Kind
	// ID is unique per collection within the process.
	ID uint64
}
