package testproc

import (
	"os"
	"syscall"
	"time"
)

// Stop sends p SIGTERM and waits for exited (closed when it has exited) for
// the graceful drain, up to grace; then it kills p and waits.
func Stop(p *os.Process, exited <-chan struct{}, grace time.Duration) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = p.Kill()
		<-exited
	}
}

// T is the part of testing.TB that Eventually uses.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Eventually polls cond until it holds; within guards against a hang and is
// not a performance assertion. On timeout it fails t with what and the last
// detail cond returned.
func Eventually(t T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	last := ""
	for time.Now().Before(deadline) {
		ok, detail := cond()
		if ok {
			return
		}
		last = detail
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: not reached; last state: %s", what, last)
}
