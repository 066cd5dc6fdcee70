package pushengine

import (
	"sync"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/clock"
)

// DebounceOptions tune the debouncer. Bootstrap reads them once from the
// environment; nothing here reads the environment.
type DebounceOptions struct {
	// After is the quiet period (PILOT_DEBOUNCE_AFTER): a batch is released
	// once no request arrived for this long. 0 releases at once.
	After time.Duration
	// Max bounds the wait (PILOT_DEBOUNCE_MAX): a batch is released once this
	// much time has passed since its first request, quiet or not. 0 means no
	// bound.
	Max time.Duration
	// EnableEDSDebounce (PILOT_ENABLE_EDS_DEBOUNCE): when false, requests
	// that are not Full (endpoint-only) skip the debouncer and are pushed at
	// once, concurrently with any debounced push.
	EnableEDSDebounce bool
}

// DefaultDebounceOptions are Istio's defaults: 100ms quiet period, 10s
// bound, endpoint updates debounced.
func DefaultDebounceOptions() DebounceOptions {
	return DebounceOptions{After: 100 * time.Millisecond, Max: 10 * time.Second, EnableEDSDebounce: true}
}

// Debounced is one batch released by the debouncer.
type Debounced struct {
	// Request is the merge of the batch's requests. For a debounced batch it
	// is the debouncer's own copy, handed over to the callback; for a bypass
	// it is the caller's request, read-only.
	Request *model.PushRequest
	// Events is how many requests were merged.
	Events int
	// First and Last are when the first and last request arrived.
	First, Last time.Time
	// Released is when the batch was handed to the callback.
	Released time.Time
	// Bypassed marks an endpoint-only request that skipped debouncing.
	Bypassed bool
}

// DebounceStats describe the debouncer's work so far.
type DebounceStats struct {
	Received int64 // requests accepted
	Released int64 // requests released inside debounced batches
	Batches  int64 // debounced batches released
	Bypassed int64 // endpoint-only requests pushed without debouncing
	Pending  int   // requests waiting in the current batch
	InFlight bool  // a debounced push is running
}

// Debouncer merges bursts of push requests into batches.
//
// State machine: the first request of a batch opens it; every request
// merges into it and moves its deadline to min(last+After, first+Max). One
// timer is armed at a time; it never fires after the deadline (which only
// moves later), and when it fires early it is re-armed for the rest. When
// the deadline passes and no debounced push is running, the batch is
// released to the callback in a new goroutine and the debouncer starts over. While a push runs, requests keep
// merging into the next batch and a deadline that passes is not acted on;
// when the push returns, the next batch is released at once if its deadline
// has passed, else its armed timer releases it later. So at most one
// debounced push runs at a time, and none is lost.
//
// Requests enqueued before Start are held; Start opens their batch. Stop
// drops the pending batch and waits for running pushes.
type Debouncer struct {
	opts  DebounceOptions
	clock clock.Clock
	push  func(Debounced)

	mu       sync.Mutex
	started  bool
	stopped  bool
	pending  *model.PushRequest
	events   int
	first    time.Time
	last     time.Time
	timer    clock.Timer
	gen      uint64 // invalidates callbacks of stopped timers
	inFlight bool
	stats    DebounceStats
	wg       sync.WaitGroup
}

// NewDebouncer returns a stopped debouncer calling push for each batch.
// push is never called concurrently with itself for debounced batches;
// bypassed requests (EnableEDSDebounce false) may run alongside.
func NewDebouncer(opts DebounceOptions, clk clock.Clock, push func(Debounced)) *Debouncer {
	if clk == nil {
		clk = clock.Real()
	}
	return &Debouncer{opts: opts, clock: clk, push: push}
}

// Enqueue adds a request. It never blocks on a push. req is read-only to
// the debouncer, which merges it into a batch it owns.
func (d *Debouncer) Enqueue(req *model.PushRequest) {
	if req == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	d.stats.Received++
	now := d.clock.Now()
	if d.started && !d.opts.EnableEDSDebounce && !req.Full {
		d.stats.Bypassed++
		b := Debounced{Request: req, Events: 1, First: now, Last: now, Released: now, Bypassed: true}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			d.push(b)
		}()
		return
	}
	if d.pending == nil {
		d.pending = req.Copy()
		d.first = now
	} else {
		d.pending.MergeInPlace(req)
	}
	d.events++
	d.last = now
	// The deadline only moves later, so an armed timer fires at or before
	// it; fire re-arms for the rest. Only arm when none is armed.
	if d.started && d.timer == nil {
		d.schedule(now)
	}
}

// Start begins releasing batches; requests held so far form a batch whose
// quiet period starts now.
func (d *Debouncer) Start() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started || d.stopped {
		return
	}
	d.started = true
	if d.pending != nil {
		now := d.clock.Now()
		d.first, d.last = now, now
		d.schedule(now)
	}
}

// Stop drops the pending batch, ignores later requests and waits for the
// pushes that are running.
func (d *Debouncer) Stop() {
	d.mu.Lock()
	d.stopped = true
	d.stopTimer()
	d.pending, d.events = nil, 0
	d.mu.Unlock()
	d.wg.Wait()
}

// Stats returns a snapshot of the counters.
func (d *Debouncer) Stats() DebounceStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.stats
	s.Pending = d.events
	s.InFlight = d.inFlight
	return s
}

// deadline is when the pending batch is due; d.mu is held.
func (d *Debouncer) deadline() time.Time {
	dl := d.last.Add(d.opts.After)
	if d.opts.Max > 0 {
		if m := d.first.Add(d.opts.Max); m.Before(dl) {
			dl = m
		}
	}
	return dl
}

// schedule releases the pending batch if it is due and nothing runs, or
// arms the timer for its deadline; d.mu is held.
func (d *Debouncer) schedule(now time.Time) {
	d.stopTimer()
	if d.pending == nil {
		return
	}
	dl := d.deadline()
	if !now.Before(dl) {
		if !d.inFlight {
			d.release(now)
		}
		// else the running push releases it when it returns
		return
	}
	gen := d.gen
	d.timer = d.clock.AfterFunc(dl.Sub(now), func() { d.fire(gen) })
}

func (d *Debouncer) fire(gen uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if gen != d.gen || d.stopped {
		return
	}
	d.timer = nil
	d.schedule(d.clock.Now())
}

// stopTimer cancels the armed timer and any callback of it already on its
// way; d.mu is held.
func (d *Debouncer) stopTimer() {
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.gen++
}

// take hands the pending batch over and marks a push in flight; d.mu is held.
func (d *Debouncer) take(now time.Time) Debounced {
	b := Debounced{Request: d.pending, Events: d.events, First: d.first, Last: d.last, Released: now}
	d.pending, d.events = nil, 0
	d.stopTimer()
	d.inFlight = true
	d.stats.Batches++
	d.stats.Released += int64(b.Events)
	return b
}

// release starts pushing the pending batch; d.mu is held.
func (d *Debouncer) release(now time.Time) {
	b := d.take(now)
	d.wg.Add(1)
	go d.run(b)
}

// run pushes b, then every batch that became due meanwhile.
func (d *Debouncer) run(b Debounced) {
	defer d.wg.Done()
	for {
		d.push(b)
		d.mu.Lock()
		d.inFlight = false
		if d.stopped || d.pending == nil {
			d.mu.Unlock()
			return
		}
		now := d.clock.Now()
		if now.Before(d.deadline()) {
			// not due: the armed timer releases it
			if d.timer == nil {
				d.schedule(now)
			}
			d.mu.Unlock()
			return
		}
		b = d.take(now)
		d.mu.Unlock()
	}
}
