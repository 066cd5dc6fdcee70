package memrelease

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestObserve(t *testing.T) {
	o := Options{}.withDefaults()
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const mib = 1 << 20
	var s state
	steps := []struct {
		name string
		cur  sample
		want bool
	}{
		{"first sample", sample{at: at(0), allocs: 100 * mib, free: 80 * mib, objects: 50 * mib, marked: 50 * mib}, false},
		{"busy: 20 MiB in 500ms", sample{at: at(500), allocs: 120 * mib, free: 80 * mib, objects: 50 * mib, marked: 50 * mib}, false},
		{"quiet for 500ms only", sample{at: at(1000), allocs: 120 * mib, free: 80 * mib, objects: 50 * mib, marked: 50 * mib}, false},
		{"quiet for 1s", sample{at: at(1500), allocs: 121 * mib, free: 80 * mib, objects: 50 * mib, marked: 50 * mib}, true},
		{"too soon after a release", sample{at: at(3000), allocs: 121 * mib, free: 80 * mib, objects: 50 * mib, marked: 50 * mib}, false},
		{"busy again", sample{at: at(12000), allocs: 200 * mib, free: 80 * mib, objects: 50 * mib, marked: 50 * mib}, false},
		{"quiet, but little free", sample{at: at(13500), allocs: 200 * mib, free: 20 * mib, objects: 50 * mib, marked: 50 * mib}, false},
		{"quiet, free small against live", sample{at: at(14000), allocs: 200 * mib, free: 40 * mib, objects: 400 * mib, marked: 400 * mib}, false},
		{"quiet with much free", sample{at: at(14500), allocs: 200 * mib, free: 90 * mib, objects: 50 * mib, marked: 50 * mib}, true},
		// a burst that ended before the heap reached its next collection:
		// its garbage is in objects, not in free pages
		{"busy, no collection since", sample{at: at(25000), allocs: 280 * mib, free: 8 * mib, objects: 130 * mib, marked: 50 * mib}, false},
		{"quiet, garbage not collected yet", sample{at: at(26500), allocs: 280 * mib, free: 8 * mib, objects: 130 * mib, marked: 50 * mib}, true},
		{"quiet, little garbage", sample{at: at(38000), allocs: 280 * mib, free: 8 * mib, objects: 60 * mib, marked: 50 * mib}, false},
	}
	for _, st := range steps {
		if got := s.observe(o, st.cur); got != st.want {
			t.Errorf("%s: release %v, want %v", st.name, got, st.want)
		}
	}
}

var sink [][]byte

func released() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// After a burst of garbage, a quiet process hands the free heap back to
// the OS.
func TestRunReleasesAfterABurst(t *testing.T) {
	for range 64 {
		sink = append(sink, make([]byte, 1<<20))
	}
	sink = nil
	runtime.GC() // the burst is garbage now, its pages free but kept
	before := released()
	stop := make(chan struct{})
	defer close(stop)
	done := make(chan uint64, 1)
	go Run(Options{Poll: 20 * time.Millisecond, Quiet: 60 * time.Millisecond, MinFree: 16 << 20, QuietRate: 64 << 20,
		Released: func(free uint64) {
			select {
			case done <- free:
			default:
			}
		}}, stop)
	select {
	case free := <-done:
		if free < 16<<20 {
			t.Errorf("released with only %d bytes free", free)
		}
		if after := released(); after <= before {
			t.Errorf("released bytes %d, before %d", after, before)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no release after a quiet burst")
	}
}

// A release that took long holds the next one back beyond MinInterval
// (the last one at t0, its cost asking for 5s).
func TestSlowReleaseDelaysTheNext(t *testing.T) {
	o := Options{}.withDefaults()
	t0 := time.Unix(1000, 0)
	const mib = 1 << 20
	quiet := func(ms int) sample {
		return sample{at: t0.Add(time.Duration(ms) * time.Millisecond), allocs: 100 * mib, free: 80 * mib, objects: 50 * mib, marked: 50 * mib}
	}
	s := state{nextRelease: t0.Add(5 * time.Second)}
	s.observe(o, quiet(2500))
	if s.observe(o, quiet(4000)) {
		t.Error("released 4s after a release whose cost asked for 5s")
	}
	if !s.observe(o, quiet(5500)) {
		t.Error("no release once the cost's wait was over")
	}
}
