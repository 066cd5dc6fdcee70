package mesh

import (
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
)

// SourceError is a source whose current document is rejected. It stays listed
// until the source holds an acceptable document again or goes missing.
type SourceError struct {
	Source string
	Err    error
	// Since is when this error (same message) was first seen.
	Since time.Time
}

// SourceWarning is a problem of an applied document that did not reject it:
// an ignored unknown field, a validation warning, or the use of defaults.
type SourceWarning struct {
	Source  string
	Message string
}

// evaluation is the outcome of applying every source once.
type evaluation[T proto.Message] struct {
	value T
	// keep: a failure keeps the last good value (and its warnings).
	keep  bool
	errs  map[int]error
	warns []SourceWarning
}

// core holds the state shared by Watcher and NetworksWatcher: the current
// value, errors and warnings per source, handlers, and the recompute loop.
type core[T proto.Message] struct {
	kind    string // "mesh config", "mesh networks"
	sources []Source
	stop    <-chan struct{}
	o       options
	eval    func() evaluation[T]

	update sync.Mutex // serialises refresh, including handler calls

	mu       sync.RWMutex
	current  T
	errs     map[int]SourceError
	warns    []SourceWarning
	handlers []func()
}

func newCore[T proto.Message](kind string, sources []Source, stop <-chan struct{}, initial T, o options) *core[T] {
	return &core[T]{
		kind:    kind,
		sources: slices.Clone(sources),
		stop:    stop,
		o:       o,
		current: initial,
		errs:    map[int]SourceError{},
	}
}

// start computes the first value and subscribes to every source.
func (c *core[T]) start(eval func() evaluation[T]) {
	c.eval = eval
	c.refresh()
	for _, s := range c.sources {
		s.Subscribe(c.refresh)
	}
}

func (c *core[T]) stopped() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

func (c *core[T]) get() T {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.current
}

func (c *core[T]) addHandler(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handlers = append(c.handlers, fn)
}

func (c *core[T]) errors() []SourceError {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]SourceError, 0, len(c.errs))
	for i := range c.sources {
		if e, ok := c.errs[i]; ok {
			out = append(out, e)
		}
	}
	return out
}

func (c *core[T]) warnings() []SourceWarning {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.warns)
}

// refresh re-evaluates the sources and calls the handlers when the value
// changed.
func (c *core[T]) refresh() {
	c.update.Lock()
	defer c.update.Unlock()
	if c.stopped() {
		return
	}
	ev := c.eval()

	c.mu.Lock()
	newErrs := c.recordErrors(ev.errs)
	var newWarns []SourceWarning
	changed := false
	if !ev.keep {
		newWarns = added(c.warns, ev.warns)
		c.warns = ev.warns
		if !proto.Equal(c.current, ev.value) {
			c.current = ev.value
			changed = true
		}
	}
	handlers := slices.Clone(c.handlers)
	c.mu.Unlock()

	c.logProblems(newErrs, newWarns, ev.keep)
	if !changed {
		return
	}
	c.o.logger.Info(c.kind + " updated")
	for _, h := range handlers {
		h()
	}
}

// recordErrors replaces the error set, keeping Since for unchanged errors,
// and returns the errors that are new or whose message changed. c.mu is held.
func (c *core[T]) recordErrors(errs map[int]error) []SourceError {
	now := c.o.clock.Now()
	next := make(map[int]SourceError, len(errs))
	var fresh []SourceError
	for i := range c.sources {
		err, ok := errs[i]
		if !ok {
			continue
		}
		prev, had := c.errs[i]
		if had && prev.Err.Error() == err.Error() {
			next[i] = SourceError{Source: prev.Source, Err: err, Since: prev.Since}
			continue
		}
		se := SourceError{Source: c.sources[i].Name(), Err: err, Since: now}
		next[i] = se
		fresh = append(fresh, se)
	}
	c.errs = next
	return fresh
}

func (c *core[T]) logProblems(errs []SourceError, warns []SourceWarning, kept bool) {
	msg := "invalid " + c.kind + ", ignoring this source"
	if kept {
		msg = "invalid " + c.kind + ", using last known state"
	}
	for _, e := range errs {
		c.o.logger.Warn(msg, "source", e.Source, "error", e.Err)
	}
	for _, w := range warns {
		c.o.logger.Warn(c.kind+" warning", "source", w.Source, "warning", w.Message)
	}
}

// added returns the warnings of next that are not in prev.
func added(prev, next []SourceWarning) []SourceWarning {
	var out []SourceWarning
	for _, w := range next {
		if !slices.Contains(prev, w) {
			out = append(out, w)
		}
	}
	return out
}

func sourceWarnings(source string, w Warnings) []SourceWarning {
	msgs := w.Messages()
	out := make([]SourceWarning, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, SourceWarning{Source: source, Message: m})
	}
	return out
}
