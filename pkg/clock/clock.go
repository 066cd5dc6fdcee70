package clock

import "time"

// Clock tells the time and schedules work. Implementations are safe for
// concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Since returns the time elapsed since t.
	Since(t time.Time) time.Duration
	// After delivers the current time on the returned channel once d has
	// passed.
	After(d time.Duration) <-chan time.Time
	// NewTimer returns a timer that delivers the time on its channel once d
	// has passed.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f once d has passed. The real clock calls f in its own
	// goroutine; the fake clock calls f from Advance, in Advance's goroutine.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a single scheduled event.
type Timer interface {
	// C is the channel the time is delivered on; it is nil for timers made
	// by AfterFunc.
	C() <-chan time.Time
	// Stop cancels the timer; it reports whether the call stopped it before
	// it fired.
	Stop() bool
	// Reset reschedules the timer to fire after d; it reports whether the
	// timer was still active.
	Reset(d time.Duration) bool
}

// Real is the wall clock.
func Real() Clock { return realClock{} }

type realClock struct{}

var _ Clock = realClock{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) Since(t time.Time) time.Duration        { return time.Since(t) }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (realClock) NewTimer(d time.Duration) Timer         { return realTimer{time.NewTimer(d)} }
func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }
