package krt

// Exited returns a channel closed when the goroutine of c (a derived, join,
// singleton or informer collection, or a HandlerRegistration) has returned.
func Exited(c any) <-chan struct{} {
	switch v := c.(type) {
	case interface{ exitedCh() chan struct{} }:
		return v.exitedCh()
	}
	panic("krt: no goroutine to watch")
}

func (b *collectionBase[T]) exitedCh() chan struct{} { return b.exited }
func (r *registration[T]) exitedCh() chan struct{}   { return r.exited }

// DeliverInformerDelete calls the informer delete handler of c directly.
func DeliverInformerDelete(c any, obj any) {
	c.(interface{ onDelete(any) }).onDelete(obj)
}

// DeliverInformerSet calls the informer add/update handler of c directly.
func DeliverInformerSet(c any, obj any) {
	c.(interface{ onSet(any) }).onSet(obj)
}
