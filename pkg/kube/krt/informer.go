package krt

import (
	"time"

	"k8s.io/client-go/tools/cache"
)

// informerSyncPoll is how often WrapClient checks whether the informer
// handler has synced (client-go offers no notification).
const informerSyncPoll = 10 * time.Millisecond

// informerCollection mirrors a client-go informer. The informer calls its
// handler serially; each call is applied to the store at once.
type informerCollection[T any] struct {
	*collectionBase[T]
	informer cache.SharedIndexInformer
	err      error
}

// WrapClient mirrors informer as a collection of T, the typed object pointer
// the informer holds (e.g. *corev1.ConfigMap). Objects are compared by
// resourceVersion and generation. The collection is synced when the
// informer synced and its initial objects reached the collection. The caller
// starts the informer. When the WithStop channel closes the handler is
// removed from the informer. If the informer refuses the handler (it was
// stopped already) the collection never syncs; the error is in /debug/krtz.
func WrapClient[T any](informer cache.SharedIndexInformer, opts ...CollectionOption) Collection[T] {
	o, meta := buildOptions[T](KindInformer, opts)
	c := &informerCollection[T]{
		collectionBase: newBase(meta, o, keyFuncFor[T](), informerEqualFor[T]()),
		informer:       informer,
	}
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onSet,
		UpdateFunc: func(_, obj any) { c.onSet(obj) },
		DeleteFunc: c.onDelete,
	})
	if err != nil {
		c.err = err
	} else {
		go c.watchSync(reg)
	}
	if o.debug != nil {
		o.debug.RegisterUntil(c, o.stop)
	}
	return c
}

func (c *informerCollection[T]) onSet(obj any) {
	if t, ok := obj.(T); ok {
		c.apply([]change[T]{{key: c.keyOf(t), val: &t}})
	}
}

func (c *informerCollection[T]) onDelete(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if t, ok := tomb.Obj.(T); ok {
			obj = t
		} else {
			c.apply([]change[T]{{key: tomb.Key}})
			return
		}
	}
	if t, ok := obj.(T); ok {
		c.apply([]change[T]{{key: c.keyOf(t)}})
	}
}

// watchSync marks the collection synced when the informer handler has, then
// waits for stop to remove the handler.
func (c *informerCollection[T]) watchSync(reg cache.ResourceEventHandlerRegistration) {
	defer close(c.exited)
	defer func() { _ = c.informer.RemoveEventHandler(reg) }()
	if !reg.HasSynced() {
		tick := time.NewTicker(informerSyncPoll)
		defer tick.Stop()
		for !reg.HasSynced() {
			select {
			case <-c.stop:
				return
			case <-tick.C:
			}
		}
	}
	c.markSynced()
	<-c.stop
}

func (c *informerCollection[T]) debugSnapshot(maxKeys int) CollectionSnapshot {
	s := baseSnapshot(c.collectionBase, maxKeys)
	if c.err != nil {
		s.Error = c.err.Error()
	}
	return s
}
