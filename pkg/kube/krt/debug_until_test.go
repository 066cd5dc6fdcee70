package krt_test

import (
	"runtime"
	"slices"
	"testing"
	"time"
	"weak"

	"github.com/meshplane/istiod/pkg/kube/krt"
)

func debugNames(h *krt.DebugHandler) []string {
	var out []string
	for _, c := range h.Snapshot() {
		out = append(out, c.Name)
	}
	return out
}

// A handler of Until(stop) lists its collections in its parent until stop
// closes, then all of them leave the listing at once, also those built
// without a stop of their own (a remote cluster's components that never
// stop by themselves), and the parent lets go of them.
func TestDebugHandlerUntil(t *testing.T) {
	h := krt.NewDebugHandler()
	stop := make(chan struct{})
	krt.NewStaticCollection[named](nil, krt.WithName("local/things"), krt.WithDebugging(h))
	remote := h.Until(stop)
	var gone weak.Pointer[krt.DebugHandler]
	func() {
		krt.NewStaticCollection[named](nil, krt.WithName("remote/no-stop"), krt.WithDebugging(remote))
		krt.NewStaticCollection[named](nil, krt.WithName("remote/with-stop"), krt.WithDebugging(remote), krt.WithStop(stop))
		gone = weak.Make(remote)
	}()
	if got, want := debugNames(h), []string{"local/things", "remote/no-stop", "remote/with-stop"}; !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	if got := debugNames(remote); len(got) != 2 {
		t.Errorf("the scoped handler lists %v", got)
	}
	remote = nil
	// a scoped handler for good (nil stop) stays
	krt.NewStaticCollection[named](nil, krt.WithName("kept/things"), krt.WithDebugging(h.Until(nil)))
	close(stop)
	deadline := time.Now().Add(5 * time.Second)
	for want := []string{"kept/things", "local/things"}; !slices.Equal(debugNames(h), want); {
		if time.Now().After(deadline) {
			t.Fatalf("after stop: %v, want %v", debugNames(h), want)
		}
		time.Sleep(time.Millisecond)
	}
	for gone.Value() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the parent still holds the scoped handler")
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}
