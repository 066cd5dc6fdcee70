package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a clock that moves only when told to. Timers, After channels and
// AfterFunc callbacks whose deadline is reached fire during Advance or Set,
// in deadline order; AfterFunc callbacks run in the goroutine that called
// Advance, after the clock has been moved and with no lock held, so a
// callback may use the clock. Channels of After and NewTimer have a buffer of
// one, so firing never blocks.
type Fake struct {
	mu      sync.Mutex
	cond    *sync.Cond
	now     time.Time
	seq     uint64
	waiters map[*fakeTimer]struct{}
}

var _ Clock = (*Fake)(nil)

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake {
	f := &Fake{now: start, waiters: map[*fakeTimer]struct{}{}}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Since returns the fake time elapsed since t.
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// After returns a channel that receives the fake time once it reaches now+d.
func (f *Fake) After(d time.Duration) <-chan time.Time { return f.NewTimer(d).C() }

// NewTimer returns a timer that fires once the fake time reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{clock: f, ch: make(chan time.Time, 1)}
	f.schedule(t, d)
	return t
}

// AfterFunc calls fn from Advance once the fake time reaches now+d. A
// non-positive d fires at the next Advance (even by zero).
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	t := &fakeTimer{clock: f, fn: fn}
	f.schedule(t, d)
	return t
}

// Advance moves the clock forward by d and fires what became due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	target := f.now.Add(d)
	f.mu.Unlock()
	f.Set(target)
}

// Set moves the clock to t (never backwards) and fires what became due.
// Timers fire one at a time in deadline order, the clock reading each
// timer's deadline while it fires, so a callback that schedules a new timer
// inside the window sees it fire in the same call.
func (f *Fake) Set(t time.Time) {
	for {
		f.mu.Lock()
		next := f.nextDue(t)
		if next == nil {
			if t.After(f.now) {
				f.now = t
			}
			f.mu.Unlock()
			return
		}
		delete(f.waiters, next)
		if next.deadline.After(f.now) {
			f.now = next.deadline
		}
		now := f.now
		f.mu.Unlock()
		next.fire(now)
	}
}

// nextDue returns the earliest timer due at or before t; f.mu is held.
func (f *Fake) nextDue(t time.Time) *fakeTimer {
	var best *fakeTimer
	for w := range f.waiters {
		if w.deadline.After(t) {
			continue
		}
		if best == nil || w.deadline.Before(best.deadline) || (w.deadline.Equal(best.deadline) && w.seq < best.seq) {
			best = w
		}
	}
	return best
}

// Waiters returns the deadlines of the timers not yet fired, earliest first.
func (f *Fake) Waiters() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]time.Time, 0, len(f.waiters))
	for w := range f.waiters {
		out = append(out, w.deadline)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// BlockUntil waits until at least n timers are pending. It lets a test wait
// for a goroutine to arm a timer before advancing, without sleeping.
func (f *Fake) BlockUntil(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.waiters) < n {
		f.cond.Wait()
	}
}

func (f *Fake) schedule(t *fakeTimer, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	t.seq = f.seq
	t.deadline = f.now.Add(d)
	f.waiters[t] = struct{}{}
	f.cond.Broadcast()
}

type fakeTimer struct {
	clock    *Fake
	ch       chan time.Time
	fn       func()
	deadline time.Time
	seq      uint64
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) fire(now time.Time) {
	if t.fn != nil {
		t.fn()
		return
	}
	select {
	case t.ch <- now:
	default:
	}
}

func (t *fakeTimer) Stop() bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	_, active := f.waiters[t]
	delete(f.waiters, t)
	return active
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	active := t.Stop()
	t.clock.schedule(t, d)
	return active
}
