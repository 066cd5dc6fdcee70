package pushengine_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds/pushengine"
	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const ms = time.Millisecond

func vsKey(name string) model.ConfigKey {
	return model.ConfigKey{Kind: kind.VirtualService, Name: name, Namespace: "default"}
}

func cfgReq(names ...string) *model.PushRequest {
	keys := make([]model.ConfigKey, 0, len(names))
	for _, n := range names {
		keys = append(keys, vsKey(n))
	}
	return &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(keys...), Reason: model.NewReasonStats(model.ConfigUpdate)}
}

func edsReq(name string) *model.PushRequest {
	return &model.PushRequest{
		ConfigsUpdated: model.NewConfigKeys(model.ConfigKey{Kind: kind.ServiceEntry, Name: name, Namespace: "default"}),
		Reason:         model.NewReasonStats(model.EndpointUpdate),
	}
}

// recorder is a push callback that hands each batch to the test and, when
// gated, waits for the test to let the push finish. It tracks how many
// pushes run at once.
type recorder struct {
	got     chan pushengine.Debounced
	gate    chan struct{}
	running atomic.Int32
	maxRun  atomic.Int32
}

func newRecorder(gated bool) *recorder {
	r := &recorder{got: make(chan pushengine.Debounced, 16)}
	if gated {
		r.gate = make(chan struct{})
	}
	return r
}

func (r *recorder) push(b pushengine.Debounced) {
	n := r.running.Add(1)
	for {
		m := r.maxRun.Load()
		if n <= m || r.maxRun.CompareAndSwap(m, n) {
			break
		}
	}
	r.got <- b
	if r.gate != nil {
		<-r.gate
	}
	r.running.Add(-1)
}

// next returns the next batch; the timeout only guards against a hung test.
func (r *recorder) next(t *testing.T) pushengine.Debounced {
	t.Helper()
	select {
	case b := <-r.got:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("no push")
		return pushengine.Debounced{}
	}
}

func (r *recorder) none(t *testing.T) {
	t.Helper()
	select {
	case b := <-r.got:
		t.Fatalf("unexpected push %v", b.Request)
	default:
	}
}

func newDebouncer(t *testing.T, opts pushengine.DebounceOptions, r *recorder) (*pushengine.Debouncer, *clock.Fake) {
	clk := clock.NewFake(epoch)
	d := pushengine.NewDebouncer(opts, clk, r.push)
	d.Start()
	t.Cleanup(func() {
		if r.gate != nil {
			close(r.gate)
		}
		d.Stop()
	})
	return d, clk
}

func keysOf(r *model.PushRequest) string { return fmt.Sprint(r.ConfigKeys()) }

func TestDebounceQuietPeriod(t *testing.T) {
	r := newRecorder(false)
	d, clk := newDebouncer(t, pushengine.DefaultDebounceOptions(), r)

	d.Enqueue(cfgReq("a"))
	clk.Advance(99 * ms)
	d.Enqueue(cfgReq("b")) // restarts the quiet period
	clk.Advance(99 * ms)
	if s := d.Stats(); s.Batches != 0 || s.Pending != 2 {
		t.Fatalf("released before the quiet period: %+v", s)
	}
	r.none(t)
	if w := clk.Waiters(); len(w) != 1 {
		t.Fatalf("%d timers armed, want 1", len(w))
	}
	clk.Advance(1 * ms)
	b := r.next(t)
	if b.Events != 2 || keysOf(b.Request) != keysOf(cfgReq("a", "b")) || b.Request.Reason[model.ConfigUpdate] != 2 {
		t.Fatalf("batch = %+v %v", b, b.Request)
	}
	if b.First != epoch || b.Last != epoch.Add(99*ms) || b.Released != epoch.Add(199*ms) {
		t.Fatalf("times first=%v last=%v released=%v", b.First, b.Last, b.Released)
	}
	// the next request opens a new batch
	d.Enqueue(cfgReq("c"))
	clk.Advance(100 * ms)
	if b := r.next(t); b.Events != 1 || keysOf(b.Request) != keysOf(cfgReq("c")) {
		t.Fatalf("second batch = %+v", b)
	}
}

func TestDebounceMaxDelay(t *testing.T) {
	r := newRecorder(false)
	d, clk := newDebouncer(t, pushengine.DebounceOptions{After: 100 * ms, Max: time.Second, EnableEDSDebounce: true}, r)
	// a request every 90ms never leaves a quiet period of 100ms
	for i := 0; ; i++ {
		d.Enqueue(cfgReq(fmt.Sprint(i)))
		if d.Stats().Batches > 0 {
			t.Fatalf("released at request %d", i)
		}
		clk.Advance(90 * ms)
		if d.Stats().Batches > 0 {
			break
		}
	}
	b := r.next(t)
	if got := b.Released.Sub(b.First); got != time.Second {
		t.Fatalf("released after %v, want the 1s bound", got)
	}
	if b.Events != 12 { // requests at 0, 90, ..., 990ms
		t.Fatalf("events = %d", b.Events)
	}
}

func TestDebounceOnePushInFlight(t *testing.T) {
	r := newRecorder(true)
	d, clk := newDebouncer(t, pushengine.DefaultDebounceOptions(), r)

	d.Enqueue(cfgReq("a"))
	clk.Advance(100 * ms)
	if b := r.next(t); keysOf(b.Request) != keysOf(cfgReq("a")) {
		t.Fatalf("first batch %v", b.Request)
	}
	// push 1 is running: requests merge into the next batch, deadlines that
	// pass are not acted on
	d.Enqueue(cfgReq("b"))
	clk.Advance(50 * ms)
	d.Enqueue(cfgReq("c"))
	clk.Advance(500 * ms)
	if s := d.Stats(); s.Batches != 1 || !s.InFlight || s.Pending != 2 {
		t.Fatalf("stats while in flight: %+v", s)
	}
	r.none(t)
	r.gate <- struct{}{} // push 1 returns; the due batch goes at once
	b := r.next(t)
	if b.Events != 2 || keysOf(b.Request) != keysOf(cfgReq("b", "c")) {
		t.Fatalf("second batch %+v %v", b, b.Request)
	}
	r.gate <- struct{}{}
	if m := r.maxRun.Load(); m != 1 {
		t.Fatalf("%d pushes ran at once", m)
	}
}

func TestDebounceInFlightNotYetDue(t *testing.T) {
	r := newRecorder(true)
	d, clk := newDebouncer(t, pushengine.DefaultDebounceOptions(), r)
	d.Enqueue(cfgReq("a"))
	clk.Advance(100 * ms)
	r.next(t)
	d.Enqueue(cfgReq("b"))
	r.gate <- struct{}{} // push 1 returns before b's quiet period ends
	// whatever the interleaving, b goes out once its period passes
	clk.Advance(100 * ms)
	if b := r.next(t); keysOf(b.Request) != keysOf(cfgReq("b")) {
		t.Fatalf("batch %v", b.Request)
	}
	r.gate <- struct{}{}
}

func TestDebounceDeadlineMovesWhileInFlight(t *testing.T) {
	r := newRecorder(true)
	d, clk := newDebouncer(t, pushengine.DefaultDebounceOptions(), r)
	d.Enqueue(cfgReq("a"))
	clk.Advance(100 * ms)
	r.next(t)              // push 1 runs from t=100ms
	d.Enqueue(cfgReq("b")) // timer armed for t=200ms
	clk.Advance(50 * ms)
	d.Enqueue(cfgReq("c")) // deadline moves to t=250ms; the timer stays
	clk.Advance(50 * ms)   // the timer fires early and re-arms
	if s := d.Stats(); s.Batches != 1 || len(clk.Waiters()) != 1 {
		t.Fatalf("stats %+v, %d timers", s, len(clk.Waiters()))
	}
	r.gate <- struct{}{} // push 1 returns at t=200ms, before the deadline
	r.none(t)
	clk.Advance(50 * ms)
	if b := r.next(t); keysOf(b.Request) != keysOf(cfgReq("b", "c")) || b.Released != epoch.Add(250*ms) {
		t.Fatalf("batch %+v %v", b, b.Request)
	}
	r.gate <- struct{}{}
}

// TestDebounceConcurrentProducers runs on the wall clock with a tiny quiet
// period; it asserts only that nothing is lost and pushes never overlap,
// never when they happen.
func TestDebounceConcurrentProducers(t *testing.T) {
	const producers, each = 8, 200
	var released, running, overlap atomic.Int64
	all := make(chan struct{})
	d := pushengine.NewDebouncer(pushengine.DebounceOptions{After: ms, Max: 5 * ms, EnableEDSDebounce: true}, nil, func(b pushengine.Debounced) {
		if running.Add(1) > 1 {
			overlap.Add(1)
		}
		if released.Add(int64(b.Events)) == producers*each {
			close(all)
		}
		running.Add(-1)
	})
	d.Start()
	defer d.Stop()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				d.Enqueue(cfgReq(fmt.Sprint(p, "-", i)))
			}
		}()
	}
	wg.Wait()
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Fatalf("released %d of %d", released.Load(), producers*each)
	}
	if overlap.Load() != 0 {
		t.Fatal("debounced pushes overlapped")
	}
}

func TestDebounceEDSBypass(t *testing.T) {
	opts := pushengine.DefaultDebounceOptions()
	opts.EnableEDSDebounce = false
	r := newRecorder(false)
	d, clk := newDebouncer(t, opts, r)

	d.Enqueue(edsReq("x")) // no clock movement needed
	b := r.next(t)
	if !b.Bypassed || b.Events != 1 || b.Request.Full {
		t.Fatalf("bypass batch %+v", b)
	}
	d.Enqueue(cfgReq("a")) // full requests are still debounced
	r.none(t)
	clk.Advance(100 * ms)
	if b := r.next(t); b.Bypassed || !b.Request.Full {
		t.Fatalf("full batch %+v", b)
	}
	if s := d.Stats(); s.Bypassed != 1 || s.Batches != 1 || s.Received != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestDebounceEDSDebouncedByDefault(t *testing.T) {
	r := newRecorder(false)
	d, clk := newDebouncer(t, pushengine.DefaultDebounceOptions(), r)
	d.Enqueue(edsReq("x"))
	d.Enqueue(edsReq("y"))
	r.none(t)
	clk.Advance(100 * ms)
	b := r.next(t)
	if b.Bypassed || b.Events != 2 || b.Request.Full || len(b.Request.ConfigsUpdated) != 2 {
		t.Fatalf("batch %+v %v", b, b.Request)
	}
}

func TestDebounceHoldsUntilStart(t *testing.T) {
	r := newRecorder(false)
	clk := clock.NewFake(epoch)
	d := pushengine.NewDebouncer(pushengine.DefaultDebounceOptions(), clk, r.push)
	defer d.Stop()
	d.Enqueue(cfgReq("a"))
	clk.Advance(time.Minute)
	r.none(t)
	d.Start()
	clk.Advance(100 * ms)
	if b := r.next(t); b.First != epoch.Add(time.Minute) {
		t.Fatalf("batch opened at %v, want Start time", b.First)
	}
}

func TestDebounceStop(t *testing.T) {
	r := newRecorder(true)
	clk := clock.NewFake(epoch)
	d := pushengine.NewDebouncer(pushengine.DefaultDebounceOptions(), clk, r.push)
	d.Start()
	d.Enqueue(cfgReq("a"))
	clk.Advance(100 * ms)
	r.next(t)
	d.Enqueue(cfgReq("b"))
	stopped := make(chan struct{})
	go func() { d.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a push was running")
	default:
	}
	r.gate <- struct{}{}
	<-stopped
	d.Enqueue(cfgReq("c"))
	clk.Advance(time.Hour)
	r.none(t)
	if s := d.Stats(); s.Batches != 1 || s.Pending != 0 {
		t.Fatalf("stats after stop %+v", s)
	}
}

func TestDebounceZeroQuietPeriod(t *testing.T) {
	r := newRecorder(false)
	d, _ := newDebouncer(t, pushengine.DebounceOptions{EnableEDSDebounce: true}, r)
	d.Enqueue(cfgReq("a"))
	if b := r.next(t); b.Events != 1 {
		t.Fatalf("batch %+v", b)
	}
}

// BenchmarkDebouncer measures how many requests per second the debouncer
// absorbs, releasing a batch every 1,000 requests. Requests name one of
// 1,000 VirtualServices.
func BenchmarkDebouncer(b *testing.B) {
	reqs := make([]*model.PushRequest, 1000)
	for i := range reqs {
		reqs[i] = cfgReq(fmt.Sprint("vs-", i))
	}
	clk := clock.NewFake(epoch)
	var released atomic.Int64
	d := pushengine.NewDebouncer(pushengine.DefaultDebounceOptions(), clk, func(x pushengine.Debounced) { released.Add(int64(x.Events)) })
	d.Start()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		d.Enqueue(reqs[i%len(reqs)])
		i++
		if i%1000 == 0 {
			clk.Advance(100 * ms)
		}
	}
	d.Stop()
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "events/s")
}
