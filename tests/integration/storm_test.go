package integration

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pkg/kube/leaderelection"
	"github.com/meshplane/istiod/tests/kube"
	"github.com/meshplane/istiod/tests/testproc"
)

// stormServices is how many Services the mesh of a storm has: each sidecar
// holds their clusters and load assignments.
const stormServices = 10

// reconnectBackoff is the sidecars' retry schedule after a refused stream
// (Envoy's xDS reconnects start at 500 ms, jittered).
var reconnectBackoff = adsc.Backoff{Initial: 500 * time.Millisecond, Max: 4 * time.Second}

// An istiod restart makes every sidecar reconnect at once. Over the new
// replica's stream rate limit some are refused with ResourceExhausted and
// come back after a backoff; every one is served in the end, and since each
// declares the versions it holds (delta initial_resource_versions) and the
// config did not change, nothing is sent again. A change after the storm
// reaches every sidecar.
func TestIstiodRestartReconnectStorm(t *testing.T) {
	r := runStorm(t, kube.Shared(t), 200, 50)
	t.Log(r)
	if r.refused == 0 {
		t.Errorf("200 sidecars reconnected at once under a limit of 50 streams/s and none was refused")
	}
	if r.resent != 0 {
		t.Errorf("%d resources the sidecars held unchanged were sent again after the restart", r.resent)
	}
}

// The figure for a fleet of 1,000 sidecars against Istio's automatic limit
// (15 + 5 per core streams/s): time until every sidecar holds its stream
// again, what was sent again, and the peak heap of the process (istiod and
// the simulated sidecars) during the storm.
func BenchmarkIstiodRestartReconnectStorm(b *testing.B) {
	env := kube.Shared(b)
	for i := 0; i < b.N; i++ {
		r := runStorm(b, env, 1000, 0)
		b.ReportMetric(r.reconnect.Seconds(), "s-to-all-reconnected")
		b.ReportMetric(float64(r.refused), "refused-streams")
		b.ReportMetric(float64(r.resent), "resources-resent")
		b.ReportMetric(float64(r.peakHeap)/(1<<20), "MiB-peak-heap")
		b.ReportMetric(float64(r.heapAfter)/(1<<20), "MiB-live-heap-after")
		b.Log(r)
	}
}

type stormResult struct {
	sidecars, held    int // sidecars, resources each holds
	refused, absent   int // refused streams, attempts that found no server
	resent            int // resources sent again after the restart
	reconnect         time.Duration
	heapBefore        uint64 // live heap (after a GC) before the storm
	peakHeap          uint64 // largest heap in use during it
	heapAfter         uint64 // live heap after it
	limit             float64
	convergedOnChange time.Duration
}

func (r stormResult) String() string {
	return fmt.Sprintf("%d sidecars holding %d resources each, limit %.0f streams/s: all reconnected in %v "+
		"(%d streams refused, %d found no server), %d resources resent, a change reached all in %v; "+
		"live heap %.1f MiB before, %.1f MiB in use at the peak of the storm, %.1f MiB live after it",
		r.sidecars, r.held, r.limit, r.reconnect.Round(time.Millisecond), r.refused, r.absent, r.resent,
		r.convergedOnChange.Round(time.Millisecond), float64(r.heapBefore)/(1<<20), float64(r.peakHeap)/(1<<20),
		float64(r.heapAfter)/(1<<20))
}

// runStorm connects n delta sidecars to one istiod, replaces it by a new one
// on the same port with the given stream limit (0: automatic) and
// reconnects them all at once.
func runStorm(tb testing.TB, env *kube.Env, n int, limit float64) stormResult {
	tb.Helper()
	ns := env.NewNamespace(tb, nil).Name
	for i := 0; i < stormServices; i++ {
		createService(tb, env, ns, fmt.Sprintf("svc-%d", i))
	}
	old, stopOld := startReplica(tb, env, ns, "127.0.0.1:0", -1) // no limit: the fleet connects quickly
	addr := old.GRPCAddr()
	sidecars := make([]*stormSidecar, n)
	for i := range sidecars {
		sidecars[i] = &stormSidecar{cfg: adsc.Config{Delta: true,
			NodeID:   fmt.Sprintf("sidecar~10.205.%d.%d~sleep-%d.%s~%s.svc.cluster.local", i/250, i%250+1, i, ns, ns),
			Metadata: map[string]any{"NAMESPACE": ns, "CLUSTER_ID": "Kubernetes", "ISTIO_VERSION": "1.31.0"}}}
	}
	tb.Cleanup(func() {
		for _, s := range sidecars {
			if s.c != nil {
				s.c.Close()
			}
		}
	})
	parallel(tb, sidecars, func(s *stormSidecar) error { return s.connect(addr, stormServices) })
	held := len(sidecars[0].versions[xds.ClusterType]) + len(sidecars[0].versions[xds.EndpointType])

	stopOld()
	for _, s := range sidecars {
		s.awaitBroken()
	}
	_, _ = startReplica(tb, env, ns, addr, limit)
	r := stormResult{sidecars: n, held: held, limit: limit}
	if limit == 0 {
		r.limit = xds.DefaultRequestLimit()
	}
	heap := startHeapSampler()
	begin := time.Now()
	parallel(tb, sidecars, func(s *stormSidecar) error { return s.reconnect(addr) })
	r.reconnect = time.Since(begin)
	r.heapBefore, r.peakHeap = heap.stop()
	r.heapAfter = liveHeap()
	for _, s := range sidecars {
		r.refused += s.attempt.Refused
		r.absent += s.attempt.Unavailable
		r.resent += s.resent
	}

	// every stream is live and subscribed: a new Service reaches them all
	begin = time.Now()
	createService(tb, env, ns, "after-storm")
	want := "outbound|9080||after-storm." + ns + ".svc.cluster.local"
	parallel(tb, sidecars, func(s *stormSidecar) error { return s.awaitCluster(want) })
	r.convergedOnChange = time.Since(begin)
	return r
}

// stormSidecar is one simulated sidecar, used by one goroutine at a time.
type stormSidecar struct {
	cfg      adsc.Config
	c        *adsc.Client
	versions map[string]map[string]string // what it holds, by type
	eds      []string                     // the EDS clusters it watches
	attempt  adsc.Attempt
	resent   int
}

func (s *stormSidecar) connect(addr string, services int) error {
	a, err := adsc.DialUntilAccepted(context.Background(), addr, s.cfg, reconnectBackoff, time.Minute,
		func(c *adsc.Client) error { return c.Watch(xds.ClusterType) })
	if err != nil {
		return err
	}
	s.c = a.Client
	for name, m := range a.First.Resources {
		if c, ok := m.(*clusterv3.Cluster); ok && c.GetType() == clusterv3.Cluster_EDS {
			s.eds = append(s.eds, name)
		}
	}
	if len(s.eds) < services {
		return fmt.Errorf("%s: %d EDS clusters, want %d or more", s.cfg.NodeID, len(s.eds), services)
	}
	slices.Sort(s.eds)
	if err := s.c.Watch(xds.EndpointType, s.eds...); err != nil {
		return err
	}
	if _, err := s.c.Next(time.Minute); err != nil {
		return err
	}
	s.versions = map[string]map[string]string{xds.ClusterType: s.c.Versions(xds.ClusterType),
		xds.EndpointType: s.c.Versions(xds.EndpointType)}
	return nil
}

// awaitBroken waits until the old replica ended the stream.
func (s *stormSidecar) awaitBroken() {
	for {
		if _, err := s.c.Next(time.Minute); err != nil {
			s.c.Close()
			return
		}
	}
}

// reconnect opens a stream to the new replica, subscribing to both types
// with the versions held, as Envoy does, and counts the held resources that
// come again unchanged.
func (s *stormSidecar) reconnect(addr string) error {
	a, err := adsc.DialUntilAccepted(context.Background(), addr, s.cfg, reconnectBackoff, time.Minute,
		func(c *adsc.Client) error {
			if err := c.WatchWithInitialVersions(xds.ClusterType, s.versions[xds.ClusterType]); err != nil {
				return err
			}
			return c.WatchWithInitialVersions(xds.EndpointType, s.versions[xds.EndpointType], s.eds...)
		})
	if err != nil {
		return err
	}
	s.attempt, s.c = a, a.Client
	s.count(a.First)
	second, err := s.c.Next(time.Minute)
	if err != nil {
		return err
	}
	s.count(second)
	if len(a.First.Removed)+len(second.Removed) > 0 {
		return fmt.Errorf("%s: removals after the restart: %v %v", s.cfg.NodeID, a.First.Removed, second.Removed)
	}
	return nil
}

func (s *stormSidecar) count(r *adsc.Response) {
	for name := range r.Resources {
		if _, held := s.versions[r.TypeURL][name]; held {
			s.resent++
		}
	}
}

func (s *stormSidecar) awaitCluster(name string) error {
	for s.c.Resource(xds.ClusterType, name) == nil {
		r, err := s.c.Next(time.Minute)
		if err != nil {
			return fmt.Errorf("%s waiting for %s: %v", s.cfg.NodeID, name, err)
		}
		s.count(r)
	}
	return nil
}

// parallel runs f for every sidecar at once and fails tb with the first
// error.
func parallel(tb testing.TB, sidecars []*stormSidecar, f func(*stormSidecar) error) {
	tb.Helper()
	var wg sync.WaitGroup
	var first atomic.Pointer[error]
	for _, s := range sidecars {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(s); err != nil {
				first.CompareAndSwap(nil, &err)
			}
		}()
	}
	wg.Wait()
	if err := first.Load(); err != nil {
		tb.Fatal(*err)
	}
}

// startReplica runs istiod in process with its gRPC (plaintext xDS) port on
// grpcAddr and the given stream limit (bootstrap.PilotArgs.RequestLimit);
// it is shut down by the returned func or when the test ends.
func startReplica(tb testing.TB, env *kube.Env, ns, grpcAddr string, limit float64) (*bootstrap.Server, func()) {
	tb.Helper()
	args := bootstrap.DefaultArgs()
	args.KubeConfig = env.Kubeconfig
	args.Namespace = ns
	args.HTTPAddr, args.MonitoringAddr, args.SecureGRPCAddr, args.HTTPSAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	args.GRPCAddr = grpcAddr
	args.MeshConfigFile = filepath.Join(tb.TempDir(), "no-mesh-file")
	args.NetworksConfigFile = filepath.Join(tb.TempDir(), "no-networks-file")
	args.ShutdownDuration = time.Second
	args.RequestLimit = limit
	args.PodName = fmt.Sprintf("istiod-%d", istiodCount.Add(1))
	args.Security.LeaderElection = leaderelection.Timing{LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond}
	srv, err := bootstrap.NewServer(args)
	if err != nil {
		tb.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		tb.Fatal(err)
	}
	var once sync.Once
	stop := func() { once.Do(srv.Shutdown) }
	tb.Cleanup(stop)
	testproc.Eventually(tb, time.Minute, "istiod ready", func() (bool, string) {
		resp, err := http.Get("http://" + srv.HTTPAddr() + "/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	return srv, stop
}

// heapSampler records the largest live heap while it runs.
type heapSampler struct {
	before uint64
	peak   atomic.Uint64
	done   chan struct{}
	exited chan struct{}
}

func startHeapSampler() *heapSampler {
	h := &heapSampler{before: liveHeap(), done: make(chan struct{}), exited: make(chan struct{})}
	h.peak.Store(h.before)
	go func() {
		defer close(h.exited)
		var m runtime.MemStats
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-tick.C:
				runtime.ReadMemStats(&m)
				if m.HeapInuse > h.peak.Load() {
					h.peak.Store(m.HeapInuse)
				}
			}
		}
	}()
	return h
}

// liveHeap is the heap in use right after a collection: what is reachable.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func (h *heapSampler) stop() (before, peak uint64) {
	close(h.done)
	<-h.exited
	return h.before, h.peak.Load()
}
