package xds_test

import (
	"runtime"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/xds"
)

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
