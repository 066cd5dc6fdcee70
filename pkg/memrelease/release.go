// Package memrelease hands the heap memory a burst of work left free back
// to the operating system once the process is quiet again.
//
// After a push to every proxy, a Go heap keeps the pages of the burst's
// garbage: the runtime returns them only gradually, so the resident memory
// an operator sees (and the kubelet counts) stays at the burst's high-water
// mark long after the live heap went back down. Istio's istiod behaves the
// same way. The releaser waits until the process has allocated almost
// nothing for a while, then collects and returns the free pages at once
// (the garbage of a burst that ended between two collections counts). It
// changes nothing while work runs: the garbage collector's pacing (GOGC, a
// memory limit) is left alone.
package memrelease

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Options tune the releaser; the zero value of a field takes its default.
type Options struct {
	// Poll is how often the heap is sampled (500ms).
	Poll time.Duration
	// Quiet is how long the process must allocate less than QuietRate
	// before free memory is released (1s).
	Quiet time.Duration
	// QuietRate is the allocation rate, in bytes per second, under which
	// the process counts as quiet (4 MiB/s).
	QuietRate uint64
	// MinFree is how much reclaimable heap (free pages not yet returned,
	// and garbage since the last collection) makes a release worth a
	// garbage collection (32 MiB); it must also be a quarter of the live
	// heap or more.
	MinFree uint64
	// MinInterval is the least time between two releases (2s); a release
	// that took long pushes the next one further, so that releasing never
	// takes more than a fiftieth of the time (a release collects the whole
	// heap: tens of milliseconds for a heap of tens of megabytes).
	MinInterval time.Duration
	// Released, when set, is called after each release with the bytes
	// that were reclaimable before it.
	Released func(free uint64)
}

func (o Options) withDefaults() Options {
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.Quiet <= 0 {
		o.Quiet = time.Second
	}
	if o.QuietRate == 0 {
		o.QuietRate = 4 << 20
	}
	if o.MinFree == 0 {
		o.MinFree = 32 << 20
	}
	if o.MinInterval <= 0 {
		o.MinInterval = 2 * time.Second
	}
	return o
}

// sample is what a decision reads of the heap.
type sample struct {
	at      time.Time
	allocs  uint64 // bytes allocated since the start (cumulative)
	free    uint64 // heap bytes free and not yet returned to the OS
	objects uint64 // heap bytes in objects, garbage not yet collected included
	marked  uint64 // heap bytes the last collection found live
}

// live is the live heap as the last collection found it.
func (s sample) live() uint64 {
	if s.marked == 0 {
		return s.objects
	}
	return s.marked
}

// reclaimable is what a collection and a release would hand back: the
// free pages, and the objects allocated since the last collection beyond
// what it found live. A burst that ended before the heap reached its next
// collection leaves its garbage there, not in free pages.
func (s sample) reclaimable() uint64 {
	r := s.free
	if s.objects > s.marked && s.marked > 0 {
		r += s.objects - s.marked
	}
	return r
}

var metricNames = []string{"/gc/heap/allocs:bytes", "/memory/classes/heap/free:bytes", "/memory/classes/heap/objects:bytes", "/gc/heap/live:bytes"}

func read(now time.Time) sample {
	ms := make([]metrics.Sample, len(metricNames))
	for i, n := range metricNames {
		ms[i].Name = n
	}
	metrics.Read(ms)
	v := func(i int) uint64 {
		if ms[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return ms[i].Value.Uint64()
	}
	return sample{at: now, allocs: v(0), free: v(1), objects: v(2), marked: v(3)}
}

// state is the releaser's memory between samples.
type state struct {
	quietSince time.Time // zero: not quiet
	last       sample
	// nextRelease is the earliest time of the next release: MinInterval
	// after the last one, or longer when it took long (zero: none yet)
	nextRelease time.Time
}

// releaseCostFactor bounds the time spent releasing: after a release that
// took d, the next waits at least releaseCostFactor × d.
const releaseCostFactor = 50

// observe takes a sample and reports whether to release now.
func (s *state) observe(o Options, cur sample) bool {
	prev := s.last
	s.last = cur
	if prev.at.IsZero() {
		return false
	}
	elapsed := cur.at.Sub(prev.at).Seconds()
	rate := uint64(0)
	if cur.allocs > prev.allocs && elapsed > 0 {
		rate = uint64(float64(cur.allocs-prev.allocs) / elapsed)
	}
	if rate >= o.QuietRate {
		s.quietSince = time.Time{}
		return false
	}
	if s.quietSince.IsZero() {
		s.quietSince = prev.at
	}
	if r := cur.reclaimable(); cur.at.Sub(s.quietSince) < o.Quiet || r < o.MinFree || r < cur.live()/4 {
		return false
	}
	if cur.at.Before(s.nextRelease) {
		return false
	}
	s.nextRelease = cur.at.Add(o.MinInterval)
	return true
}

// Run samples the heap until stop closes, releasing free memory after each
// burst of allocation once the process is quiet.
func Run(o Options, stop <-chan struct{}) {
	o = o.withDefaults()
	var s state
	t := time.NewTicker(o.Poll)
	defer t.Stop()
	s.observe(o, read(time.Now()))
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			cur := read(now)
			if !s.observe(o, cur) {
				continue
			}
			start := time.Now()
			debug.FreeOSMemory() // collects, then returns the free pages
			if byCost := start.Add(releaseCostFactor * time.Since(start)); byCost.After(s.nextRelease) {
				s.nextRelease = byCost
			}
			if o.Released != nil {
				o.Released(cur.reclaimable())
			}
			// what the release itself allocated does not count against quiet
			s.last = read(time.Now())
		}
	}
}
