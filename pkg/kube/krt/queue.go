package krt

import "sync"

// queue is an unbounded FIFO with one consumer. push never blocks, so it may
// be called with any lock held; the consumer takes everything queued at once.
type queue[E any] struct {
	mu     sync.Mutex
	items  []E
	signal chan struct{}
}

func newQueue[E any]() *queue[E] {
	return &queue[E]{signal: make(chan struct{}, 1)}
}

// push appends items and wakes the consumer.
func (q *queue[E]) push(items ...E) {
	q.mu.Lock()
	q.items = append(q.items, items...)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// wait returns everything queued, blocking until there is something. It
// returns false when stop or done closes first.
func (q *queue[E]) wait(stop, done <-chan struct{}) ([]E, bool) {
	for {
		select {
		case <-stop:
			return nil, false
		case <-done:
			return nil, false
		default:
		}
		q.mu.Lock()
		items := q.items
		q.items = nil
		q.mu.Unlock()
		if len(items) > 0 {
			return items, true
		}
		select {
		case <-q.signal:
		case <-stop:
			return nil, false
		case <-done:
			return nil, false
		}
	}
}
