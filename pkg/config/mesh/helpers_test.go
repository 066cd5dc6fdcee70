package mesh_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// waitTimeout guards channel waits; tests never sleep for logic.
const waitTimeout = 10 * time.Second

func ptr(s string) *string { return &s }

// fakeClock fires After channels only when Advance moves past their deadline.
type fakeClock struct {
	mu         sync.Mutex
	now        time.Time
	waiters    []fakeWaiter
	registered chan time.Duration
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{
		now:        time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		registered: make(chan time.Duration, 100),
	}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, fakeWaiter{at: c.now.Add(d), ch: ch})
	select {
	case c.registered <- d:
	default:
	}
	return ch
}

// Advance moves the clock and fires every waiter that is due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
			continue
		}
		kept = append(kept, w)
	}
	c.waiters = kept
}

// waitRegistered waits until some goroutine called After(d).
func (c *fakeClock) waitRegistered(t *testing.T, d time.Duration) {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		select {
		case got := <-c.registered:
			if got == d {
				return
			}
		case <-timeout:
			t.Fatalf("nobody waited for %v on the clock", d)
		}
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testLogger() (*slog.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// counter counts handler calls and signals each on a channel.
type counter struct {
	mu sync.Mutex
	n  int
	ch chan struct{}
}

func newCounter() *counter { return &counter{ch: make(chan struct{}, 100)} }

func (c *counter) inc() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	select {
	case c.ch <- struct{}{}:
	default:
	}
}

func (c *counter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func mustJSON(t *testing.T, m proto.Message) string {
	t.Helper()
	b, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
