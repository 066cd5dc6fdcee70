package xds

import (
	"runtime"
)

// Semaphore bounds how many pushes run at once.
type Semaphore struct{ slots chan struct{} }

// NewSemaphore allows n holders at once (at least 1).
func NewSemaphore(n int) *Semaphore {
	return &Semaphore{slots: make(chan struct{}, max(n, 1))}
}

// Acquire takes a slot, blocking until one is free; false if stop closed
// first.
func (s *Semaphore) Acquire(stop <-chan struct{}) bool {
	select {
	case s.slots <- struct{}{}:
		return true
	case <-stop:
		return false
	}
}

// TryAcquire takes a slot if one is free.
func (s *Semaphore) TryAcquire() bool {
	select {
	case s.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// Release frees a slot taken by Acquire or TryAcquire.
func (s *Semaphore) Release() { <-s.slots }

// Cap returns the number of slots.
func (s *Semaphore) Cap() int { return cap(s.slots) }

// PushThrottle turns PILOT_PUSH_THROTTLE into a concurrency limit: a
// positive value is used as is; 0 (automatic) scales with the cores the
// process may use, as Istio does: 15+5×GOMAXPROCS, at most 100.
func PushThrottle(configured int) int {
	if configured > 0 {
		return configured
	}
	return min(15+5*runtime.GOMAXPROCS(0), 100)
}
