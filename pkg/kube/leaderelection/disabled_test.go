package leaderelection_test

import (
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshplane/istiod/pkg/kube/leaderelection"
)

// runner is what both elections offer.
type runner interface {
	AddRunFunction(func(stop <-chan struct{}))
	Run(stop <-chan struct{})
	IsLeader() bool
}

// ENABLE_LEADER_ELECTION=false (Timing.Disabled): both elections run their
// functions at once and until stop, as if they always led, without a
// single request to the API server (no Lease, no ConfigMap lock, no read
// of one); Run returns once the functions returned.
func TestDisabledRunsWithoutALock(t *testing.T) {
	off := leaderelection.Timing{Disabled: true}
	for name, build := range map[string]func(*fake.Clientset) runner{
		"lease": func(c *fake.Clientset) runner {
			return leaderelection.New(c, "istio-system", leaderelection.GatewayStatusController, "istiod-1", off)
		},
		"prioritized": func(c *fake.Clientset) runner {
			return leaderelection.NewPrioritized(c, leaderelection.PrioritizedOptions{Namespace: "istio-system",
				Name: leaderelection.NamespaceController, Identity: "istiod-1", Timing: off,
				DefaultRevision: func() string { return "canary" }})
		},
	} {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset()
			e := build(client)
			started := make(chan int, 2)
			stopped := make(chan struct{}, 2)
			for i := range 2 {
				e.AddRunFunction(func(stop <-chan struct{}) {
					started <- i
					<-stop
					stopped <- struct{}{}
				})
			}
			if !e.IsLeader() {
				t.Error("IsLeader is false with the election disabled")
			}
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				e.Run(stop)
				close(done)
			}()
			for range 2 {
				select {
				case <-started:
				case <-time.After(20 * time.Second):
					t.Fatal("the functions did not run")
				}
			}
			select {
			case <-done:
				t.Fatal("Run returned before stop")
			default:
			}
			close(stop)
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not return after stop")
			}
			if len(stopped) != 2 {
				t.Errorf("Run returned before its functions (%d of 2 returned)", len(stopped))
			}
			if a := client.Actions(); len(a) != 0 {
				t.Errorf("requests to the API server: %v", a)
			}
		})
	}
}
