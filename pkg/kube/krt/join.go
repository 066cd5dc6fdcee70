package krt

// joinCollection merges collections of the same type. Order is precedence:
// for a key held by several inputs the first input's object wins; when it
// goes, the next holder's object takes over (an update event). One goroutine
// recomputes dirty keys from the inputs' current state (level-triggered).
type joinCollection[T any] struct {
	*collectionBase[T]
	inputs  []*collectionBase[T]
	queue   *queue[task]
	cancels []func()
	synced  []bool
}

// JoinCollection joins cs in order of precedence. It is synced when every
// input synced and their initial objects were processed. Inputs must key
// objects the same way (they do when they hold the same type, except
// singletons' collections, which only join with each other).
func JoinCollection[T any](cs []Collection[T], opts ...CollectionOption) Collection[T] {
	o, meta := buildOptions[T](KindJoin, opts)
	inputs := make([]*collectionBase[T], len(cs))
	for i, c := range cs {
		inputs[i] = baseOf(c)
	}
	var keyOf func(T) string
	if len(inputs) > 0 {
		keyOf = inputs[0].keyOf
	} else {
		keyOf = func(T) string { return "" }
	}
	j := &joinCollection[T]{
		collectionBase: newBase(meta, o, keyOf, equalFuncFor[T]()),
		inputs:         inputs,
		queue:          newQueue[task](),
		synced:         make([]bool, len(inputs)),
	}
	for i, in := range inputs {
		j.cancels = append(j.cancels, in.subscribe(&subscriber[T]{
			onEvents: func(events []Event[T]) {
				keys := make([]string, len(events))
				for n, e := range events {
					keys[n] = in.keyOf(e.Latest())
				}
				j.queue.push(task{keys: keys})
			},
			onSynced: func() { j.queue.push(task{primarySynced: true, input: i}) },
		}, true))
	}
	if len(inputs) == 0 {
		j.markSynced()
	} else {
		go j.run()
	}
	if o.debug != nil {
		o.debug.RegisterUntil(j, o.stop)
	}
	return j
}

func (j *joinCollection[T]) run() {
	defer close(j.exited)
	defer func() {
		for _, c := range j.cancels {
			c()
		}
	}()
	for {
		tasks, ok := j.queue.wait(j.stop, nil)
		if !ok {
			return
		}
		j.process(tasks)
	}
}

func (j *joinCollection[T]) process(tasks []task) {
	dirty := newOrderedSet()
	for _, t := range tasks {
		if t.primarySynced {
			j.synced[t.input] = true
		}
		for _, k := range t.keys {
			dirty.add(k)
		}
	}
	changes := make([]change[T], 0, len(dirty.order))
	for _, k := range dirty.order {
		changes = append(changes, change[T]{key: k, val: j.winner(k)})
	}
	j.apply(changes)
	if !j.HasSynced() && allTrue(j.synced) {
		j.markSynced()
	}
}

// winner returns the object of the first input holding key, or nil.
func (j *joinCollection[T]) winner(key string) *T {
	for _, in := range j.inputs {
		if v := in.GetKey(key); v != nil {
			return v
		}
	}
	return nil
}

func allTrue(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return false
		}
	}
	return true
}
