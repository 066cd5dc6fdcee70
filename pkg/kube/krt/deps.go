package krt

// This file tracks what each input of a derived collection fetched, so that a
// change of a fetched collection recomputes only the inputs it concerns. All
// of it is owned by the derived collection's goroutine.

// HandlerContext is handed to transforms; pass it to Fetch and FetchOne so
// they record dependencies. It is valid only during the transform call that
// received it. Only this package implements it.
type HandlerContext interface {
	// DiscardResult makes the collection keep the previous output of this
	// input (no event); the dependencies fetched in this run are added to
	// the recorded ones.
	DiscardResult()
	handlerContext()
}

type transformContext struct {
	tracker   *depTracker
	records   []depRecord
	discarded bool
}

func (c *transformContext) DiscardResult()  { c.discarded = true }
func (c *transformContext) handlerContext() {}

// task is one unit of work for a derived or join collection's goroutine.
type task struct {
	// keys of the primary input that changed (derived) or output keys to
	// recompute (join).
	keys []string
	// primarySynced: the primary input synced (derived); for join the index
	// of the input that synced is in input.
	primarySynced bool
	input         int
	// depChanged marks the inputs that a change of a dependency concerns.
	depChanged func(mark func(inputKey string))
	// depSynced: that dependency synced.
	depSynced *dependency
}

// depRecord is one Fetch of one run of a transform.
type depRecord struct {
	dep    *dependency
	filter *fetchFilter
}

// depTracker holds the dependencies of one derived collection.
type depTracker struct {
	queue    *queue[task]
	deps     map[uint64]*dependency
	unsynced map[uint64]struct{}
}

func newDepTracker(q *queue[task]) *depTracker {
	return &depTracker{queue: q, deps: map[uint64]*dependency{}, unsynced: map[uint64]struct{}{}}
}

// dependency is one fetched collection and, per input, what was fetched
// from it, indexed by key and namespace so that an event finds the inputs
// it concerns without scanning all of them.
type dependency struct {
	id     uint64
	name   string
	cancel func()
	byKey  map[string]map[string]int            // object key → input → records
	byNS   map[string]map[string][]*fetchFilter // namespace → input → filters
	scan   map[string][]*fetchFilter            // input → filters
}

// trackSource returns the dependency on src, subscribing to it on first use.
func trackSource[T any](tr *depTracker, src *collectionBase[T]) *dependency {
	if d := tr.deps[src.meta.ID]; d != nil {
		return d
	}
	d := &dependency{
		id:    src.meta.ID,
		name:  src.meta.Name,
		byKey: map[string]map[string]int{},
		byNS:  map[string]map[string][]*fetchFilter{},
		scan:  map[string][]*fetchFilter{},
	}
	tr.deps[d.id] = d
	tr.unsynced[d.id] = struct{}{}
	d.cancel = src.subscribe(&subscriber[T]{
		onEvents: func(events []Event[T]) {
			tr.queue.push(task{depChanged: func(mark func(string)) {
				for _, e := range events {
					if e.Old != nil {
						affectedBy(d, src, *e.Old, mark)
					}
					if e.New != nil {
						affectedBy(d, src, *e.New, mark)
					}
				}
			}})
		},
		onSynced: func() { tr.queue.push(task{depSynced: d}) },
	}, false)
	return d
}

// affectedBy marks the inputs whose records on d match o. Key records match
// on the key alone (a superset, which only costs a recomputation).
func affectedBy[T any](d *dependency, src *collectionBase[T], o T, mark func(string)) {
	key := src.keyOf(o)
	for in := range d.byKey[key] {
		mark(in)
	}
	if len(d.byNS) > 0 {
		for in, fs := range d.byNS[namespaceOf(o, key)] {
			if anyMatch(fs, o, key) {
				mark(in)
			}
		}
	}
	for in, fs := range d.scan {
		if anyMatch(fs, o, key) {
			mark(in)
		}
	}
}

func anyMatch[T any](fs []*fetchFilter, o T, key string) bool {
	for _, f := range fs {
		if matchesFilter(f, o, key) {
			return true
		}
	}
	return false
}

// replace swaps the records of input from old to new.
func (tr *depTracker) replace(input string, old, new []depRecord) {
	for _, r := range old {
		r.dep.remove(input, r.filter)
	}
	for _, r := range new {
		r.dep.add(input, r.filter)
	}
}

func (d *dependency) add(input string, f *fetchFilter) {
	switch {
	case f.hasKeys:
		for _, k := range f.keys {
			m := d.byKey[k]
			if m == nil {
				m = map[string]int{}
				d.byKey[k] = m
			}
			m[input]++
		}
	case f.hasNS:
		m := d.byNS[f.namespace]
		if m == nil {
			m = map[string][]*fetchFilter{}
			d.byNS[f.namespace] = m
		}
		m[input] = append(m[input], f)
	default:
		d.scan[input] = append(d.scan[input], f)
	}
}

// remove drops one record; records of an input are always removed together,
// so namespace and scan entries go at once.
func (d *dependency) remove(input string, f *fetchFilter) {
	switch {
	case f.hasKeys:
		for _, k := range f.keys {
			m := d.byKey[k]
			if m[input]--; m[input] <= 0 {
				delete(m, input)
			}
			if len(m) == 0 {
				delete(d.byKey, k)
			}
		}
	case f.hasNS:
		if m := d.byNS[f.namespace]; m != nil {
			delete(m, input)
			if len(m) == 0 {
				delete(d.byNS, f.namespace)
			}
		}
	default:
		delete(d.scan, input)
	}
}

// stopAll ends the subscriptions to every dependency.
func (tr *depTracker) stopAll() {
	for _, d := range tr.deps {
		d.cancel()
	}
}
