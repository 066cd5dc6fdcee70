package generators

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// The newest snapshot owns the cache: generation from an older one (a
// connection still finishing its push) neither wipes nor fills it.
func TestCacheBelongsToTheNewestSnapshot(t *testing.T) {
	old := model.NewPushContext()
	newer := model.NewPushContext()
	var c snapshotCache[string]
	builds := 0
	build := func(name string) func() xds.Generated {
		return func() xds.Generated {
			builds++
			return xds.Generated{Resources: []*discovery.Resource{{Name: name}}}
		}
	}
	c.get(nil, newer, "k", 0, build("new"))
	if got := c.get(nil, old, "k", 0, build("old")); got.Resources[0].Name != "old" {
		t.Errorf("an older snapshot read the newer one's entry: %v", got.Resources)
	}
	if got := c.get(nil, newer, "k", 0, build("new-again")); got.Resources[0].Name != "new" || builds != 2 {
		t.Errorf("the newer snapshot's entry was lost to an older snapshot (builds %d, got %v)", builds, got.Resources)
	}
	// versions: a different one misses, an older build never replaces a newer one
	c.get(nil, newer, "v", 2, build("v2"))
	c.get(nil, newer, "v", 1, build("v1"))
	if got := c.get(nil, newer, "v", 2, build("v2-again")); got.Resources[0].Name != "v2" {
		t.Errorf("version 2 entry replaced by an older build: %v", got.Resources)
	}
}

// Proxies that miss the same entry while it is being built wait for that
// build instead of each building a copy (after a push the proxies of a
// scope all miss at once), and all get the one result.
func TestCacheBuildsOnceForConcurrentMisses(t *testing.T) {
	push := model.NewPushContext()
	var c snapshotCache[string]
	var builds atomic.Int32
	release := make(chan struct{})
	build := func() xds.Generated {
		builds.Add(1)
		<-release
		return xds.Generated{Resources: []*discovery.Resource{{Name: "k"}}}
	}
	const callers = 8
	results := make(chan xds.Generated, callers)
	for i := 0; i < callers; i++ {
		go func() { results <- c.get(nil, push, "k", 0, build) }()
	}
	// a second build would start within microseconds; give it ample time
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) && builds.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	var first *discovery.Resource
	for i := 0; i < callers; i++ {
		r := <-results
		if first == nil {
			first = r.Resources[0]
		}
		if r.Resources[0] != first {
			t.Fatal("callers got different copies")
		}
	}
	if n := builds.Load(); n != 1 {
		t.Fatalf("%d builds for one entry", n)
	}
}

// Builds of different entries run at most as many at once as the process
// has cores: each holds its protos under construction, so a push that
// misses every scope at once does not hold all of them together.
func TestCacheBuildsBoundedByCores(t *testing.T) {
	push := model.NewPushContext()
	var c snapshotCache[int]
	var slots buildSlots
	var running, most atomic.Int32
	build := func() xds.Generated {
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		running.Add(-1)
		return xds.Generated{}
	}
	const callers = 16
	done := make(chan struct{}, callers)
	for i := range callers {
		go func() {
			c.get(&slots, push, i, 0, build)
			done <- struct{}{}
		}()
	}
	for range callers {
		<-done
	}
	if m := most.Load(); m > int32(cap(slots.ch)) || m < 1 {
		t.Errorf("%d builds ran at once, the bound is %d", m, cap(slots.ch))
	}
}

// Each set of generators has its own bound: the builds of one (another
// server in the same process) never wait for another's.
func TestBuildSlotsOwnedByGenerators(t *testing.T) {
	var a, b SidecarGenerators
	for range runtime.GOMAXPROCS(0) {
		a.slots.acquire() // a's every slot held
	}
	got := make(chan struct{})
	go func() {
		b.slots.acquire()
		close(got)
	}()
	select {
	case <-got:
		b.slots.release()
	case <-time.After(10 * time.Second):
		t.Fatal("a build of one set of generators waited for another's slots")
	}
}
