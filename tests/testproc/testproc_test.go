package testproc_test

import (
	"bufio"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/meshplane/istiod/tests/testproc"
)

type fakeT struct{ failed string }

func (f *fakeT) Helper()                        {}
func (f *fakeT) Fatalf(format string, a ...any) { f.failed = fmt.Sprintf(format, a...) }

func TestEventually(t *testing.T) {
	n := 0
	ft := &fakeT{}
	testproc.Eventually(ft, 5*time.Second, "third try", func() (bool, string) { n++; return n == 3, "" })
	if ft.failed != "" || n != 3 {
		t.Errorf("failed %q after %d tries", ft.failed, n)
	}
	testproc.Eventually(ft, 50*time.Millisecond, "never", func() (bool, string) { return false, "still no" })
	if ft.failed != "never: not reached; last state: still no" {
		t.Errorf("failure %q", ft.failed)
	}
}

// A process that ignores SIGTERM is killed after the grace period.
func TestStopKillsAfterGrace(t *testing.T) {
	cmd := exec.Command("sh", "-c", "trap '' TERM; echo ready; exec sleep 30")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	// the trap is set (and inherited by sleep) once the shell says so
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	testproc.Stop(cmd.Process, exited, 200*time.Millisecond)
	if cmd.ProcessState == nil || cmd.ProcessState.Success() {
		t.Errorf("state %v", cmd.ProcessState)
	}
}

// Addresses are never handed out twice in a process, even once the first
// caller's ports are free again: two control planes started one after the
// other cannot be given the same port.
func TestFreeAddrsNeverRepeat(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		addrs, err := testproc.FreeAddrs(5)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			if seen[a] {
				t.Fatalf("%s handed out twice", a)
			}
			seen[a] = true
		}
	}
}
