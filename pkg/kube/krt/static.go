package krt

// staticCollection is a collection written by its owner through Set, Delete
// and Reset. Writes are applied synchronously: when Set returns, GetKey sees
// the object and the events are queued to every handler.
type staticCollection[T any] struct {
	*collectionBase[T]
}

var _ StaticCollection[int] = (*staticCollection[int])(nil)

// NewStaticCollection returns a collection holding initial. It is synced from
// the start unless the Unsynced() option is given, in which case MarkSynced
// flips it. T must have a key (see keyFuncFor: ResourceNamer, metav1.Object
// or config.Config); construction panics otherwise.
func NewStaticCollection[T any](initial []T, opts ...CollectionOption) StaticCollection[T] {
	o, meta := buildOptions[T](KindStatic, opts)
	s := &staticCollection[T]{collectionBase: newBase(meta, o, keyFuncFor[T](), equalFuncFor[T]())}
	s.Reset(initial)
	if !o.unsynced {
		s.markSynced()
	}
	if o.debug != nil {
		o.debug.RegisterUntil(s, o.stop)
	}
	return s
}

// Set implements StaticCollection.
func (s *staticCollection[T]) Set(obj T) {
	s.apply([]change[T]{{key: s.keyOf(obj), val: &obj}})
}

// Delete implements StaticCollection.
func (s *staticCollection[T]) Delete(key string) {
	s.apply([]change[T]{{key: key}})
}

// Reset implements StaticCollection. Objects in objs are set, objects absent
// from objs are deleted, all in one batch of events. When objs holds a key
// twice the last one wins.
func (s *staticCollection[T]) Reset(objs []T) {
	want := make(map[string]T, len(objs))
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		k := s.keyOf(o)
		if _, dup := want[k]; !dup {
			keys = append(keys, k)
		}
		want[k] = o
	}
	s.replaceAll(keys, want)
}

// MarkSynced implements StaticCollection.
func (s *staticCollection[T]) MarkSynced() { s.markSynced() }

func (s *staticCollection[T]) debugSnapshot(maxKeys int) CollectionSnapshot {
	return baseSnapshot(s.collectionBase, maxKeys)
}
