package krt

import (
	"sync"
	"sync/atomic"
)

// registration delivers a collection's events to one handler from its own
// goroutine, in the order the collection emitted them. Its queue is fed under
// the collection's lock (never blocking), so a slow handler delays only
// itself.
type registration[T any] struct {
	queue    *queue[delivery[T]]
	stop     <-chan struct{}
	done     chan struct{}
	doneOnce sync.Once
	cancel   func()
	synced   atomic.Bool
	syncedCh chan struct{}
	exited   chan struct{} // closed when the goroutine returns
}

// delivery is one queued batch, or the marker that the collection synced.
type delivery[T any] struct {
	events []Event[T]
	synced bool
}

var _ HandlerRegistration = (*registration[int])(nil)

// Register implements Collection.
func (b *collectionBase[T]) Register(f func(Event[T])) HandlerRegistration {
	return b.RegisterBatch(func(events []Event[T]) {
		for _, e := range events {
			f(e)
		}
	}, true)
}

// RegisterBatch implements Collection.
func (b *collectionBase[T]) RegisterBatch(f func(events []Event[T]), runExistingState bool) HandlerRegistration {
	r := &registration[T]{
		queue:    newQueue[delivery[T]](),
		stop:     b.stop,
		done:     make(chan struct{}),
		syncedCh: make(chan struct{}),
		exited:   make(chan struct{}),
	}
	cancel := b.subscribe(&subscriber[T]{
		onEvents: func(events []Event[T]) { r.queue.push(delivery[T]{events: events}) },
		onSynced: func() { r.queue.push(delivery[T]{synced: true}) },
	}, runExistingState)
	r.cancel = cancel
	go r.run(f)
	return r
}

func (r *registration[T]) run(f func([]Event[T])) {
	defer close(r.exited)
	for {
		items, ok := r.queue.wait(r.stop, r.done)
		if !ok {
			return
		}
		for _, d := range items {
			select {
			case <-r.done:
				return
			default:
			}
			if d.synced {
				r.synced.Store(true)
				close(r.syncedCh)
				continue
			}
			f(d.events)
		}
	}
}

// HasSynced implements HandlerRegistration.
func (r *registration[T]) HasSynced() bool { return r.synced.Load() }

// WaitUntilSynced implements HandlerRegistration.
func (r *registration[T]) WaitUntilSynced(stop <-chan struct{}) bool {
	select {
	case <-r.syncedCh:
		return true
	case <-stop:
		return r.HasSynced()
	}
}

// UnregisterHandler implements HandlerRegistration.
func (r *registration[T]) UnregisterHandler() {
	r.doneOnce.Do(func() {
		r.cancel()
		close(r.done)
	})
}
