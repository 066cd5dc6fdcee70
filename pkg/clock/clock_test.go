package clock_test

import (
	"testing"
	"time"

	"github.com/meshplane/istiod/pkg/clock"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestFakeNowAndAdvance(t *testing.T) {
	c := clock.NewFake(epoch)
	if !c.Now().Equal(epoch) {
		t.Fatalf("Now = %v", c.Now())
	}
	c.Advance(time.Second)
	if got := c.Since(epoch); got != time.Second {
		t.Fatalf("Since = %v", got)
	}
	c.Set(epoch) // never backwards
	if got := c.Since(epoch); got != time.Second {
		t.Fatalf("Set moved the clock backwards: %v", got)
	}
}

func TestFakeAfterFiresOnlyWhenDue(t *testing.T) {
	c := clock.NewFake(epoch)
	ch := c.After(100 * time.Millisecond)
	c.Advance(99 * time.Millisecond)
	select {
	case <-ch:
		t.Fatal("fired early")
	default:
	}
	c.Advance(time.Millisecond)
	select {
	case got := <-ch:
		if !got.Equal(epoch.Add(100 * time.Millisecond)) {
			t.Fatalf("fired with %v", got)
		}
	default:
		t.Fatal("did not fire at its deadline")
	}
}

func TestFakeAfterFuncOrderAndNesting(t *testing.T) {
	c := clock.NewFake(epoch)
	var order []string
	c.AfterFunc(30*time.Millisecond, func() { order = append(order, "c") })
	c.AfterFunc(10*time.Millisecond, func() {
		order = append(order, "a@"+c.Since(epoch).String())
		// scheduled inside the window: fires in the same Advance
		c.AfterFunc(5*time.Millisecond, func() { order = append(order, "b@"+c.Since(epoch).String()) })
	})
	c.Advance(time.Second)
	want := []string{"a@10ms", "b@15ms", "c"}
	if len(order) != len(want) {
		t.Fatalf("order = %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order = %v, want %v", order, want)
		}
	}
	if got := c.Since(epoch); got != time.Second {
		t.Fatalf("clock at %v after Advance", got)
	}
}

func TestFakeTimerStopReset(t *testing.T) {
	c := clock.NewFake(epoch)
	fired := 0
	tm := c.AfterFunc(time.Second, func() { fired++ })
	if !tm.Stop() {
		t.Fatal("Stop of an active timer reported false")
	}
	if tm.Stop() {
		t.Fatal("second Stop reported true")
	}
	c.Advance(2 * time.Second)
	if fired != 0 {
		t.Fatal("stopped timer fired")
	}
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a stopped timer reported active")
	}
	if n := len(c.Waiters()); n != 1 {
		t.Fatalf("waiters = %d", n)
	}
	c.Advance(time.Second)
	if fired != 1 {
		t.Fatalf("fired %d times", fired)
	}
	nt := c.NewTimer(time.Millisecond)
	c.Advance(time.Millisecond)
	if _, ok := <-nt.C(); !ok {
		t.Fatal("timer channel closed")
	}
}

func TestFakeBlockUntil(t *testing.T) {
	c := clock.NewFake(epoch)
	done := make(chan struct{})
	go func() {
		c.AfterFunc(time.Second, func() { close(done) })
	}()
	c.BlockUntil(1)
	c.Advance(time.Second)
	<-done
}

func TestRealClock(t *testing.T) {
	c := clock.Real()
	start := c.Now()
	fired := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(fired) })
	<-fired
	<-c.After(time.Millisecond)
	tm := c.NewTimer(time.Hour)
	if tm.C() == nil || !tm.Stop() {
		t.Fatal("real timer not stoppable")
	}
	if c.Since(start) <= 0 {
		t.Fatal("time did not pass")
	}
}
