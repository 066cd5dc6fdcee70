package xds_test

import (
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/monitoring"
)

type conn struct{ id string }

func dequeue[K comparable](t *testing.T, q *xds.PushQueue[K]) (K, *model.PushRequest) {
	t.Helper()
	con, req, ok := q.Dequeue()
	if !ok {
		t.Fatal("queue shut down")
	}
	return con, req
}

func TestPushQueueMergesPending(t *testing.T) {
	q := xds.NewPushQueue[*conn](nil)
	a, b := &conn{"a"}, &conn{"b"}
	shared := cfgReq("x")
	q.Enqueue(a, shared)
	q.Enqueue(b, shared)
	q.Enqueue(a, cfgReq("y"))
	q.Enqueue(a, cfgReq("z"))
	if n := q.Pending(); n != 2 {
		t.Fatalf("pending = %d, want one entry per connection", n)
	}
	con, req := dequeue(t, q)
	if con != a || keysOf(req) != keysOf(cfgReq("x", "y", "z")) || req.Reason[model.ConfigUpdate] != 3 {
		t.Fatalf("first = %v %v", con.id, req)
	}
	con, req = dequeue(t, q)
	if con != b || keysOf(req) != keysOf(cfgReq("x")) {
		t.Fatalf("second = %v %v", con.id, req)
	}
	if len(shared.ConfigsUpdated) != 1 || shared.Reason.Count() != 1 {
		t.Fatalf("shared request modified: %v", shared)
	}
}

func TestPushQueueRequeuesInFlight(t *testing.T) {
	q := xds.NewPushQueue[string](nil)
	q.Enqueue("a", cfgReq("x"))
	con, _ := dequeue(t, q)
	// a new request while "a" is being pushed waits for MarkDone
	q.Enqueue(con, cfgReq("y"))
	q.Enqueue(con, edsReq("e"))
	if n := q.Pending(); n != 0 {
		t.Fatalf("in-flight connection queued twice (pending %d)", n)
	}
	q.MarkDone(con)
	if n := q.Pending(); n != 1 {
		t.Fatalf("pending after MarkDone = %d", n)
	}
	_, req := dequeue(t, q)
	if !req.Full || len(req.ConfigsUpdated) != 2 || req.Reason.Count() != 2 {
		t.Fatalf("re-queued request = %v", req)
	}
	q.MarkDone(con)
	if n := q.Pending(); n != 0 {
		t.Fatalf("pending after a clean MarkDone = %d", n)
	}
}

func TestPushQueueDequeueBlocksAndShutDown(t *testing.T) {
	q := xds.NewPushQueue[string](nil)
	got := make(chan string)
	go func() {
		con, _, ok := q.Dequeue()
		if !ok {
			con = "shutdown"
		}
		got <- con
	}()
	q.Enqueue("a", cfgReq("x"))
	if c := <-got; c != "a" {
		t.Fatalf("got %q", c)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, ok := q.Dequeue(); ok {
				t.Error("Dequeue returned an item on an empty queue")
			}
		}()
	}
	q.ShutDown()
	wg.Wait()
	q.Enqueue("b", cfgReq("y"))
	if _, _, ok := q.Dequeue(); ok {
		t.Fatal("Dequeue after ShutDown returned ok")
	}
}

func TestPushQueueRemove(t *testing.T) {
	q := xds.NewPushQueue[string](nil)
	q.Enqueue("a", cfgReq("x"))
	q.Enqueue("b", cfgReq("x"))
	q.Remove("a")
	if con, _ := dequeue(t, q); con != "b" || q.Pending() != 0 {
		t.Fatalf("got %q pending %d", con, q.Pending())
	}
}

func queueTimeSamples(t *testing.T) (uint64, float64) {
	t.Helper()
	mfs, err := monitoring.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "pilot_proxy_queue_time" {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatal("pilot_proxy_queue_time not registered")
	return 0, 0
}

func TestPushQueueRecordsQueueTime(t *testing.T) {
	clk := clock.NewFake(epoch)
	q := xds.NewPushQueue[string](clk)
	n0, s0 := queueTimeSamples(t)
	q.Enqueue("a", cfgReq("x"))
	clk.Advance(2 * time.Second)
	dequeue(t, q)
	n1, s1 := queueTimeSamples(t)
	if n1 != n0+1 || math.Abs(s1-s0-2) > 1e-6 {
		t.Fatalf("queue time samples %d->%d sum %v->%v", n0, n1, s0, s1)
	}
}

func TestPushThrottle(t *testing.T) {
	if got := xds.PushThrottle(7); got != 7 {
		t.Fatalf("explicit = %d", got)
	}
	want := min(15+5*runtime.GOMAXPROCS(0), 100)
	if got := xds.PushThrottle(0); got != want {
		t.Fatalf("automatic = %d, want %d", got, want)
	}
	if s := xds.NewSemaphore(0); s.Cap() != 1 {
		t.Fatalf("cap = %d", s.Cap())
	}
	s := xds.NewSemaphore(1)
	if !s.TryAcquire() || s.TryAcquire() {
		t.Fatal("TryAcquire")
	}
	stop := make(chan struct{})
	close(stop)
	if s.Acquire(stop) {
		t.Fatal("Acquire succeeded on a full semaphore with stop closed")
	}
	s.Release()
}

func TestSendPushesBoundsConcurrency(t *testing.T) {
	q := xds.NewPushQueue[string](nil)
	sem := xds.NewSemaphore(2)
	type sent struct {
		con  string
		done func()
	}
	sends := make(chan sent, 10)
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		xds.SendPushes(stop, q, sem, func(con string, _ *model.PushRequest, done func()) { sends <- sent{con, done} })
		close(finished)
	}()
	for _, c := range []string{"a", "b", "c", "d", "e"} {
		q.Enqueue(c, cfgReq("x"))
	}
	first, second := <-sends, <-sends
	// both slots are held: the worker waits for one before taking "c"
	if first.con != "a" || second.con != "b" || q.Pending() != 3 {
		t.Fatalf("sent %s %s, pending %d", first.con, second.con, q.Pending())
	}
	first.done()
	first.done() // a second call is harmless
	if third := <-sends; third.con != "c" {
		t.Fatalf("third = %s", third.con)
	}
	if q.Pending() > 2 {
		t.Fatalf("pending %d", q.Pending())
	}
	close(stop)
	<-finished
}
