package krt_test

import (
	"testing"
	"time"

	"github.com/meshplane/istiod/pkg/kube/krt"
)

// A collection leaves the debug listing, and the handler lets go of it,
// once its stop channel closes (a remote cluster's collections, which
// would otherwise be kept for the life of the process).
func TestDebugHandlerForgetsStoppedCollections(t *testing.T) {
	h := krt.NewDebugHandler()
	stop := make(chan struct{})
	krt.NewStaticCollection[named](nil, krt.WithName("remote/things"), krt.WithDebugging(h), krt.WithStop(stop))
	krt.NewStaticCollection[named](nil, krt.WithName("local/things"), krt.WithDebugging(h))
	names := func() []string {
		var out []string
		for _, c := range h.Snapshot() {
			out = append(out, c.Name)
		}
		return out
	}
	if got := names(); len(got) != 2 {
		t.Fatalf("listed %v", got)
	}
	close(stop)
	deadline := time.Now().Add(5 * time.Second)
	for len(names()) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("still listed after stop: %v", names())
		}
		time.Sleep(time.Millisecond)
	}
	if got := names(); got[0] != "local/things" {
		t.Fatalf("left %v", got)
	}
}
