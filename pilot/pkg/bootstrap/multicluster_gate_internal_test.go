package bootstrap

import (
	"fmt"
	"testing"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// recordingUpdater records the EDS updates it gets as "host:count".
type recordingUpdater struct {
	model.FanOut
	got chan string
}

func (r *recordingUpdater) EDSUpdate(_ model.ShardKey, hostname, _ string, eps []*model.IstioEndpoint) {
	r.got <- fmt.Sprintf("%s:%d", hostname, len(eps))
}

// A syncing registry's endpoint updates are held, the last of each
// service kept, and go out in first-written order once it synced; later
// ones go straight through. A gate whose cluster stops first sends none.
func TestSyncGateHoldsEndpointsUntilSynced(t *testing.T) {
	rec := &recordingUpdater{got: make(chan string, 10)}
	g := newSyncGate(rec)
	shard := model.NewShardKey(model.Kubernetes, "cluster2")
	ep := func(n int) []*model.IstioEndpoint { return make([]*model.IstioEndpoint, n) }
	g.EDSUpdate(shard, "a", "ns", ep(0)) // read before its pods: empty
	g.EDSUpdate(shard, "b", "ns", ep(3))
	g.EDSUpdate(shard, "a", "ns", ep(2))
	synced := make(chan struct{})
	done := make(chan struct{})
	go func() {
		g.openWhen(func() bool {
			select {
			case <-synced:
				return true
			default:
				return false
			}
		}, make(chan struct{}))
		close(done)
	}()
	select {
	case u := <-rec.got:
		t.Fatalf("%s sent before the registry synced", u)
	case <-time.After(50 * time.Millisecond):
	}
	if g.isOpen() {
		t.Fatal("open before synced")
	}
	close(synced)
	<-done
	for _, want := range []string{"a:2", "b:3"} {
		if got := <-rec.got; got != want {
			t.Fatalf("sent %s, want %s", got, want)
		}
	}
	g.EDSUpdate(shard, "c", "ns", ep(1))
	if got := <-rec.got; got != "c:1" {
		t.Fatalf("after opening: %s", got)
	}

	stopped := newSyncGate(rec)
	stopped.EDSUpdate(shard, "a", "ns", ep(1))
	stop := make(chan struct{})
	close(stop)
	stopped.openWhen(func() bool { return false }, stop)
	if stopped.isOpen() || len(rec.got) != 0 {
		t.Fatal("a stopped cluster's updates went out")
	}
}
