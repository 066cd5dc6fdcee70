package autoregistration

import (
	"sync"
	"time"

	"github.com/meshplane/istiod/pkg/clock"
)

// task is one unit of work; an error retries it (see queue).
type task struct {
	what string
	run  func() error
	// attempts made so far
	attempts int
	// dropped, when set, is called when the queue gives the task up
	dropped func()
}

// queue runs tasks one at a time, in order, on the goroutine of Run. A
// task that fails is retried after 5ms, 10ms, 20ms, 40ms (on the queue's
// clock) and dropped after its fifth failure, with the failure logged: the
// retries Istio's controller queues make.
type queue struct {
	name       string
	clk        clock.Clock
	maxRetries int

	mu     sync.Mutex
	items  []*task
	timers map[clock.Timer]struct{}
	closed bool
	wake   chan struct{}
}

const (
	maxAttempts = 5
	baseBackoff = 5 * time.Millisecond
)

func newQueue(name string, clk clock.Clock) *queue {
	return &queue{name: name, clk: clk, maxRetries: maxAttempts, timers: map[clock.Timer]struct{}{}, wake: make(chan struct{}, 1)}
}

// add queues a task now.
func (q *queue) add(t *task) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.items = append(q.items, t)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// addAfter queues a task once d has passed on the queue's clock.
func (q *queue) addAfter(d time.Duration, t *task) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	var tm clock.Timer
	tm = q.clk.AfterFunc(d, func() {
		q.mu.Lock()
		delete(q.timers, tm)
		q.mu.Unlock()
		q.add(t)
	})
	q.timers[tm] = struct{}{}
}

func (q *queue) pop() *task {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return nil
	}
	t := q.items[0]
	q.items[0] = nil
	q.items = q.items[1:]
	return t
}

// run works until stop closes; then pending timers are stopped and queued
// tasks dropped.
func (q *queue) run(stop <-chan struct{}) {
	defer q.close()
	for {
		for t := q.pop(); t != nil; t = q.pop() {
			select {
			case <-stop:
				return
			default:
			}
			q.do(t)
		}
		select {
		case <-stop:
			return
		case <-q.wake:
		}
	}
}

func (q *queue) do(t *task) {
	err := t.run()
	if err == nil {
		return
	}
	t.attempts++
	if t.attempts >= q.maxRetries {
		log.Warnf("%s: %s: giving up after %d attempts: %v", q.name, t.what, t.attempts, err)
		if t.dropped != nil {
			t.dropped()
		}
		return
	}
	log.Debugf("%s: %s: attempt %d failed: %v", q.name, t.what, t.attempts, err)
	q.addAfter(baseBackoff<<(t.attempts-1), t)
}

func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for tm := range q.timers {
		tm.Stop()
	}
	q.timers = nil
	q.items = nil
}
