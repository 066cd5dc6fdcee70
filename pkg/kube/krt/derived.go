package krt

import (
	"slices"
	"sync"
	"sync/atomic"
)

// derivedCollection computes its objects from a primary collection with a
// transform, and recomputes an input when the input or something it fetched
// changes. One goroutine per collection does all the work, so transforms of
// one collection never run concurrently and handlers see its events in order.
//
// The goroutine is level-triggered: an event only marks an input key dirty,
// and a dirty input is recomputed from the primary's current object. Bursts
// coalesce and the output never goes back to an older state of an input.
type derivedCollection[I, O any] struct {
	*collectionBase[O]
	parent       *collectionBase[I]
	transform    func(ctx HandlerContext, i I) []O
	queue        *queue[task]
	tracker      *depTracker
	cancelParent func()

	// Owned by the goroutine; stateMu makes debug snapshots safe.
	primarySynced bool
	stateMu       sync.RWMutex
	inputs        map[string]*inputState[O]
	owners        map[string][]string // output key → inputs producing it, sorted
	runs          atomic.Int64
}

type inputState[O any] struct {
	outputs []keyed[O]
	records []depRecord
}

type keyed[O any] struct {
	key string
	val O
}

// NewManyCollection derives zero or more objects from each object of c.
//
// f must be pure and idempotent (see doc.go): it reads other collections only
// through Fetch/FetchOne with ctx. When two inputs produce the same output
// key, the input with the lowest key wins; when it stops producing that key,
// the next producer's object takes over (an update event). Within one input
// the last object with a key wins. O must have a key (see doc.go).
func NewManyCollection[I, O any](c Collection[I], f func(ctx HandlerContext, i I) []O, opts ...CollectionOption) Collection[O] {
	o, meta := buildOptions[O](KindDerived, opts)
	return newDerived(c, o, meta, keyFuncFor[O](), equalFuncFor[O](), f)
}

// NewCollection derives zero or one object from each object of c: f returns
// nil for none. See NewManyCollection.
func NewCollection[I, O any](c Collection[I], f func(ctx HandlerContext, i I) *O, opts ...CollectionOption) Collection[O] {
	o, meta := buildOptions[O](KindDerived, opts)
	return newDerived(c, o, meta, keyFuncFor[O](), equalFuncFor[O](), func(ctx HandlerContext, i I) []O {
		if out := f(ctx, i); out != nil {
			return []O{*out}
		}
		return nil
	})
}

// MapCollection derives exactly one object from each object of c. f must be
// pure. See NewManyCollection.
func MapCollection[I, O any](c Collection[I], f func(i I) O, opts ...CollectionOption) Collection[O] {
	o, meta := buildOptions[O](KindDerived, opts)
	return newDerived(c, o, meta, keyFuncFor[O](), equalFuncFor[O](), func(_ HandlerContext, i I) []O {
		return []O{f(i)}
	})
}

func newDerived[I, O any](c Collection[I], o collectionOptions, meta Metadata, keyOf func(O) string,
	equal func(a, b O) bool, f func(ctx HandlerContext, i I) []O,
) *derivedCollection[I, O] {
	d := &derivedCollection[I, O]{
		collectionBase: newBase(meta, o, keyOf, equal),
		parent:         baseOf(c),
		transform:      f,
		queue:          newQueue[task](),
		inputs:         map[string]*inputState[O]{},
		owners:         map[string][]string{},
	}
	d.tracker = newDepTracker(d.queue)
	d.cancelParent = d.parent.subscribe(&subscriber[I]{
		onEvents: func(events []Event[I]) {
			keys := make([]string, len(events))
			for i, e := range events {
				keys[i] = d.parent.keyOf(e.Latest())
			}
			d.queue.push(task{keys: keys})
		},
		onSynced: func() { d.queue.push(task{primarySynced: true}) },
	}, true)
	go d.run()
	if o.debug != nil {
		o.debug.RegisterUntil(d, o.stop)
	}
	return d
}

func (d *derivedCollection[I, O]) run() {
	defer close(d.exited)
	defer d.tracker.stopAll()
	defer d.cancelParent()
	for {
		tasks, ok := d.queue.wait(d.stop, nil)
		if !ok {
			return
		}
		d.process(tasks)
	}
}

// process handles one drained batch of tasks: it collects the dirty inputs,
// recomputes them, applies the output changes as one batch of events, then
// marks the collection synced once the primary and every dependency known so
// far have synced and their initial events were processed.
func (d *derivedCollection[I, O]) process(tasks []task) {
	dirty := newOrderedSet()
	for _, t := range tasks {
		switch {
		case t.keys != nil:
			for _, k := range t.keys {
				dirty.add(k)
			}
		case t.depChanged != nil:
			t.depChanged(dirty.add)
		case t.primarySynced:
			d.primarySynced = true
		case t.depSynced != nil:
			delete(d.tracker.unsynced, t.depSynced.id)
		}
	}
	cs := newChangeSet[O]()
	for _, k := range dirty.order {
		d.recompute(k, cs)
	}
	d.apply(cs.list())
	if d.primarySynced && len(d.tracker.unsynced) == 0 && !d.HasSynced() {
		d.markSynced()
	}
}

// recompute runs the transform for one input and records its outputs and
// dependencies.
func (d *derivedCollection[I, O]) recompute(key string, cs *changeSet[O]) {
	cur := d.parent.GetKey(key)
	if cur == nil {
		d.dropInput(key, cs)
		return
	}
	ctx := &transformContext{tracker: d.tracker}
	outs := d.transform(ctx, *cur)
	d.runs.Add(1)

	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	st := d.inputs[key]
	if st == nil {
		st = &inputState[O]{}
		d.inputs[key] = st
	}
	if ctx.discarded {
		records := append(slices.Clip(st.records), ctx.records...)
		d.tracker.replace(key, st.records, records)
		st.records = records
		return
	}
	d.tracker.replace(key, st.records, ctx.records)
	st.records = ctx.records
	d.setOutputs(key, st, d.keyedOutputs(outs), cs)
}

// keyedOutputs keys the outputs of one run; a key repeated keeps the last.
func (d *derivedCollection[I, O]) keyedOutputs(outs []O) []keyed[O] {
	res := make([]keyed[O], 0, len(outs))
	var seen map[string]int
	if len(outs) > 1 {
		seen = make(map[string]int, len(outs))
	}
	for _, o := range outs {
		k := d.keyOf(o)
		if i, dup := seen[k]; dup {
			res[i].val = o
			continue
		}
		if seen != nil {
			seen[k] = len(res)
		}
		res = append(res, keyed[O]{key: k, val: o})
	}
	return res
}

func (d *derivedCollection[I, O]) setOutputs(input string, st *inputState[O], outs []keyed[O], cs *changeSet[O]) {
	old := st.outputs
	st.outputs = outs
	if len(old) > 0 {
		kept := make(map[string]struct{}, len(outs))
		for _, o := range outs {
			kept[o.key] = struct{}{}
		}
		for _, o := range old {
			if _, ok := kept[o.key]; !ok {
				d.disown(input, o.key, cs)
			}
		}
	}
	for i := range outs {
		d.own(input, outs[i].key, &outs[i].val, cs)
	}
}

func (d *derivedCollection[I, O]) dropInput(input string, cs *changeSet[O]) {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	st := d.inputs[input]
	if st == nil {
		return
	}
	for _, o := range st.outputs {
		d.disown(input, o.key, cs)
	}
	d.tracker.replace(input, st.records, nil)
	delete(d.inputs, input)
}

// own records that input produces out; the lowest input key is the winner
// whose value the collection holds.
func (d *derivedCollection[I, O]) own(input, out string, val *O, cs *changeSet[O]) {
	owners := d.owners[out]
	i, found := slices.BinarySearch(owners, input)
	if !found {
		owners = slices.Insert(owners, i, input)
		d.owners[out] = owners
	}
	if owners[0] == input {
		cs.set(out, val)
	}
}

// disown records that input no longer produces out; the next producer, if
// any, takes over.
func (d *derivedCollection[I, O]) disown(input, out string, cs *changeSet[O]) {
	owners := d.owners[out]
	i, found := slices.BinarySearch(owners, input)
	if !found {
		return
	}
	owners = slices.Delete(owners, i, i+1)
	if len(owners) == 0 {
		delete(d.owners, out)
		cs.set(out, nil)
		return
	}
	d.owners[out] = owners
	if i == 0 {
		for _, o := range d.inputs[owners[0]].outputs {
			if o.key == out {
				cs.set(out, &o.val)
				break
			}
		}
	}
}

// changeSet collects output writes of one batch, last write per key wins,
// in first-touched order.
type changeSet[O any] struct {
	order []string
	vals  map[string]*O
}

func newChangeSet[O any]() *changeSet[O] {
	return &changeSet[O]{vals: map[string]*O{}}
}

func (c *changeSet[O]) set(key string, val *O) {
	if _, ok := c.vals[key]; !ok {
		c.order = append(c.order, key)
	}
	c.vals[key] = val
}

func (c *changeSet[O]) list() []change[O] {
	out := make([]change[O], len(c.order))
	for i, k := range c.order {
		out[i] = change[O]{key: k, val: c.vals[k]}
	}
	return out
}

// orderedSet is a set of strings that remembers insertion order.
type orderedSet struct {
	order []string
	seen  map[string]struct{}
}

func newOrderedSet() *orderedSet { return &orderedSet{seen: map[string]struct{}{}} }

func (s *orderedSet) add(k string) {
	if _, ok := s.seen[k]; !ok {
		s.seen[k] = struct{}{}
		s.order = append(s.order, k)
	}
}
