package leaderelection_test

import (
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshplane/istiod/pkg/kube/leaderelection"
)

// Fast timings for tests (the fake clientset does not check resource
// versions, so contention between replicas is tested against a real API
// server in tests/integration).
var fast = leaderelection.Timing{LeaseDuration: 600 * time.Millisecond, RenewDeadline: 400 * time.Millisecond, RetryPeriod: 50 * time.Millisecond}

// A lone replica leads, runs its functions, and stops them and releases
// the Lease when stopped.
func TestRunsWhileLeading(t *testing.T) {
	client := fake.NewClientset()
	e := leaderelection.New(client, "istio-system", leaderelection.NamespaceController, "istiod-1", fast)
	started, stopped := make(chan struct{}), make(chan struct{})
	e.AddRunFunction(func(stop <-chan struct{}) {
		close(started)
		<-stop
		close(stopped)
	})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		e.Run(stop)
		close(done)
	}()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("never led")
	}
	if !e.IsLeader() {
		t.Error("runs its functions but IsLeader is false")
	}
	close(stop)
	for _, c := range []chan struct{}{stopped, done} {
		select {
		case <-c:
		case <-time.After(20 * time.Second):
			t.Fatal("did not stop")
		}
	}
	if e.IsLeader() {
		t.Error("still leader after stop")
	}
}
