// Package krt is the declarative collections library of the control plane:
// every store and index is a Collection, built from informers (WrapClient),
// from the owner's writes (NewStaticCollection, NewStatic), or derived from
// other collections (MapCollection, NewCollection, NewManyCollection,
// NewSingleton, JoinCollection), and indexed with NewIndex. It owns the
// consistency and ordering rules below; it knows nothing of Istio kinds.
//
// # Keys and equality
//
// Objects are keyed by ResourceName() when T or *T implements
// ResourceNamer, else namespace/name (name when cluster-scoped) for
// metav1.Objects and config.Config. A constructor panics when T has no key.
// A write emits an event only when the object really changed: Equals(T) bool
// when implemented, proto.Equal for proto messages, reflect.DeepEqual
// otherwise; informer collections compare resourceVersion and generation.
//
// # Rules for transforms
//
// A transform (the f of MapCollection, NewCollection, NewManyCollection,
// NewSingleton, the extract of NewIndex, FilterGeneric) must be pure and
// idempotent: no I/O, no clock, no globals; the same inputs give the same
// outputs. It reads other collections only through Fetch/FetchOne with its
// HandlerContext, which records what it read: the input is recomputed when an
// object matching a recorded filter (before or after the change) changes, and
// only then. It may run any number of times, and is not run for states that
// were superseded before it got to them. A transform that panics crashes the
// collection's goroutine: transforms validate their input instead.
// ctx.DiscardResult() keeps the previous output of the input.
//
// # Objects are immutable
//
// Objects handed to transforms and handlers, returned by GetKey, List, Fetch
// and Lookup, and carried by events are shared: nobody modifies them. A
// transform builds new objects (deep-copying what it changes).
//
// # Ordering and consistency
//
//   - Writes to static and informer collections apply synchronously: when
//     Set returns, GetKey, List and indexes see it.
//   - A collection's indexes reflect a change before any handler or derived
//     collection is told of it: a handler reading an index while handling
//     an event sees at least that event's state (or a later one).
//   - Derived and join collections are eventually consistent. Each has one
//     goroutine that recomputes, level-triggered, the inputs marked dirty by
//     events, from the inputs' current state; an output never goes back to an
//     older state of an input.
//   - Each handler registration has its own goroutine and queue: it receives
//     the collection's events in the order the collection applied them, one
//     call at a time. Per key the events form a chain: add, updates whose Old
//     is the previous New, delete. A slow handler delays only itself.
//   - Register delivers the existing objects as adds first;
//     RegisterBatch(f, true) delivers them as the first batch,
//     RegisterBatch(f, false) only later changes. Registration takes the
//     snapshot and subscribes atomically: no change is lost or seen twice.
//   - Two inputs of a derived collection producing one output key: the input
//     with the lowest key wins; when it stops producing the key the next
//     producer's object replaces it (update event). Conflicts are listed in
//     /debug/krtz. For JoinCollection the first collection holding a key wins.
//
// # Synced
//
//   - static: at construction, or at MarkSynced with the Unsynced() option;
//   - informer: when the informer synced and its initial objects were
//     applied;
//   - derived and singleton: when the primary input synced, its initial
//     objects were transformed, and every collection fetched during that
//     synced and had its events processed;
//   - join: when every input synced and its objects were processed;
//   - a HandlerRegistration: when the collection synced and every event
//     queued before that point was delivered to the handler.
//
// # Goroutines
//
// Derived, join and singleton collections, every handler registration, and
// WrapClient (until synced, then to remove its informer handler) run a
// goroutine. All of them exit when the WithStop channel of their collection
// closes; registrations also on UnregisterHandler. Without WithStop they live
// for the process. Handlers and transforms are never called with a lock of
// the library held, so they may read any collection. The exception is
// NewIndex's extract, called under the collection's lock: it reads only its
// argument.
//
// # Introspection
//
// A DebugHandler given with WithDebugging lists every collection: name,
// type, synced, outputs and, for derived collections, what each input
// fetched (served as JSON at /debug/krtz).
package krt
