package xds

import (
	"runtime"
	"sync"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/clock"
)

// PushQueue holds the connections that wait for a push, each with the merge
// of the requests addressed to it. K identifies a connection (a pointer or
// an ID). A connection is at most once in the queue; a connection being
// pushed (taken by Dequeue, not yet MarkDone) collects new requests aside
// and goes back in the queue when MarkDone is called. It is safe for
// concurrent use.
type PushQueue[K comparable] struct {
	clock clock.Clock

	mu   sync.Mutex
	cond *sync.Cond
	// pending holds the request of every connection waiting for a push,
	// queued or held while it is processing.
	pending map[K]*queuedPush
	// queue orders the connections ready to be taken.
	queue []K
	// processing holds the connections taken and not yet marked done.
	processing map[K]struct{}
	shutdown   bool
}

type queuedPush struct {
	req *model.PushRequest
	// owned marks req as the queue's own copy, merged into in place;
	// otherwise it is the (shared, read-only) request first enqueued.
	owned bool
	since time.Time
}

// NewPushQueue returns an empty queue; clk times the wait of each
// connection (pilot_proxy_queue_time).
func NewPushQueue[K comparable](clk clock.Clock) *PushQueue[K] {
	if clk == nil {
		clk = clock.Real()
	}
	q := &PushQueue[K]{clock: clk, pending: map[K]*queuedPush{}, processing: map[K]struct{}{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Enqueue adds a request for con, merging it into the request already
// pending for con. req may be shared with other connections: the queue never
// modifies it. Requests enqueued after ShutDown are dropped.
func (q *PushQueue[K]) Enqueue(con K, req *model.PushRequest) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	if p, ok := q.pending[con]; ok {
		if !p.owned {
			p.req, p.owned = p.req.Copy(), true
		}
		p.req.MergeInPlace(req)
		return
	}
	q.pending[con] = &queuedPush{req: req, since: q.clock.Now()}
	if _, busy := q.processing[con]; busy {
		return // re-queued by MarkDone
	}
	q.queue = append(q.queue, con)
	q.cond.Signal()
}

// Dequeue takes the connection that has waited longest, blocking until one
// is ready. ok is false once the queue is shut down. The connection counts
// as processing until MarkDone.
func (q *PushQueue[K]) Dequeue() (con K, req *model.PushRequest, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.queue) == 0 && !q.shutdown {
		q.cond.Wait()
	}
	if q.shutdown {
		return con, nil, false
	}
	con = q.queue[0]
	var zero K
	q.queue[0] = zero
	q.queue = q.queue[1:]
	p := q.pending[con]
	delete(q.pending, con)
	q.processing[con] = struct{}{}
	recordQueueTime(q.clock.Since(p.since))
	return con, p.req, true
}

// MarkDone ends the push of con; if requests arrived for con meanwhile, con
// goes back in the queue.
func (q *PushQueue[K]) MarkDone(con K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, con)
	if _, ok := q.pending[con]; ok && !q.shutdown {
		q.queue = append(q.queue, con)
		q.cond.Signal()
	}
}

// Remove forgets con (a closed connection): its pending request is dropped.
func (q *PushQueue[K]) Remove(con K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.pending, con)
	delete(q.processing, con)
	for i, c := range q.queue {
		if c == con {
			q.queue = append(q.queue[:i], q.queue[i+1:]...)
			break
		}
	}
}

// Pending returns how many connections are ready to be taken.
func (q *PushQueue[K]) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// ShutDown wakes every Dequeue, which returns ok false from now on.
func (q *PushQueue[K]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutdown = true
	q.cond.Broadcast()
}

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

// SendPushes feeds connections from q to send, at most sem.Cap() pushes at
// a time, until stop closes or q shuts down (closing stop shuts q down).
// send gets a done function to call exactly once when the push of con is
// finished or abandoned; it frees the slot and marks con done. send should
// hand the push over (to the connection's goroutine) rather than do it.
func SendPushes[K comparable](stop <-chan struct{}, q *PushQueue[K], sem *Semaphore, send func(con K, req *model.PushRequest, done func())) {
	exit := make(chan struct{})
	defer close(exit)
	go func() {
		select {
		case <-stop:
			q.ShutDown()
		case <-exit:
		}
	}()
	for {
		if !sem.Acquire(stop) {
			return
		}
		con, req, ok := q.Dequeue()
		if !ok {
			sem.Release()
			return
		}
		var once sync.Once
		send(con, req, func() {
			once.Do(func() {
				q.MarkDone(con)
				sem.Release()
			})
		})
	}
}
