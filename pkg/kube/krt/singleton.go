package krt

// singletonKey is the key of the only object of a singleton's collection.
const singletonKey = "singleton"

func singletonKeyOf[T any](T) string { return singletonKey }

// singletonTrigger is the one input of a computed singleton.
type singletonTrigger struct{}

// singleton adapts a collection holding at most singletonKey.
type singleton[T any] struct {
	c Collection[T]
}

var _ Singleton[int] = singleton[int]{}

// Get implements Singleton.
func (s singleton[T]) Get() *T { return s.c.GetKey(singletonKey) }

// Register implements Singleton.
func (s singleton[T]) Register(f func(Event[T])) HandlerRegistration { return s.c.Register(f) }

// AsCollection implements Singleton. The collection holds zero or one object
// under a fixed key; FetchOne(ctx, s.AsCollection()) reads it from a
// transform and records the dependency.
func (s singleton[T]) AsCollection() Collection[T] { return s.c }

// NewSingleton computes one value with f, and computes it again whenever a
// collection f fetched through ctx changes. f returns nil for no value. Like
// every transform f must be pure. It is synced once f ran and its fetched
// collections synced.
func NewSingleton[O any](f func(ctx HandlerContext) *O, opts ...CollectionOption) Singleton[O] {
	o, meta := buildOptions[O](KindSingleton, opts)
	trigger := newBase(Metadata{Name: meta.Name + "/trigger", Kind: KindStatic, ID: collectionIDs.Add(1)},
		collectionOptions{}, singletonKeyOf[singletonTrigger], func(a, b singletonTrigger) bool { return true })
	trigger.apply([]change[singletonTrigger]{{key: singletonKey, val: &singletonTrigger{}}})
	trigger.markSynced()
	d := newDerived(&staticCollection[singletonTrigger]{trigger}, o, meta, singletonKeyOf[O], equalFuncFor[O](),
		func(ctx HandlerContext, _ singletonTrigger) []O {
			if v := f(ctx); v != nil {
				return []O{*v}
			}
			return nil
		})
	return singleton[O]{c: d}
}

// staticSingleton is a singleton set by its owner.
type staticSingleton[T any] struct {
	singleton[T]
	s *staticCollection[T]
}

var _ StaticSingleton[int] = staticSingleton[int]{}

// NewStatic returns a singleton holding initial (nil: no value) until Set.
// It is synced from the start unless the Unsynced() option is given.
func NewStatic[T any](initial *T, opts ...CollectionOption) StaticSingleton[T] {
	o, meta := buildOptions[T](KindSingleton, opts)
	s := &staticCollection[T]{collectionBase: newBase(meta, o, singletonKeyOf[T], equalFuncFor[T]())}
	s.setSingleton(initial)
	if !o.unsynced {
		s.markSynced()
	}
	if o.debug != nil {
		o.debug.RegisterUntil(s, o.stop)
	}
	return staticSingleton[T]{singleton: singleton[T]{c: s}, s: s}
}

// Set implements StaticSingleton.
func (s staticSingleton[T]) Set(v *T) { s.s.setSingleton(v) }

// MarkSynced marks a singleton created with Unsynced() as synced.
func (s staticSingleton[T]) MarkSynced() { s.s.markSynced() }

func (s *staticCollection[T]) setSingleton(v *T) {
	if v == nil {
		s.apply([]change[T]{{key: singletonKey}})
		return
	}
	c := *v
	s.apply([]change[T]{{key: singletonKey, val: &c}})
}
