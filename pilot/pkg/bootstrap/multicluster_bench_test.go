//go:build linux

package bootstrap

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/pkg/kube/multicluster"
	"github.com/meshplane/istiod/pkg/log"
)

// BenchmarkMulticluster is issue 23: one istiod, a fake local cluster
// and remote clusters read from remote secrets, each a fake client
// preloaded with services over 20 namespaces, one EndpointSlice per
// service and a ready pod per endpoint (injected-Deployment labels,
// owners, service accounts, nodes over three zones). A sidecar of the
// local cluster is connected to the plaintext xDS port throughout and
// holds every cluster and the endpoints of every EDS cluster. The size
// is 10 clusters × 300 services × 4,000 endpoints; MULTICLUSTER_BENCH_SIZE
// (e.g. 3x100x1000) shrinks it.
//
// Sub-benchmarks (they share the server; each one that needs the remote
// clusters adds them if an earlier one did not):
//
//   - Sync: ns/op is the wall time from creating the remote secrets to the
//     sidecar holding every remote endpoint. Reported per remote cluster:
//     retained heap (B/cluster), CPU to sync (cpu-s/cluster), idle CPU
//     (idle-cores/cluster); and the fake clientsets' own memory
//     (tracker-B/cluster, not in B/cluster), the heap left after the
//     secrets are deleted again (leak-B/cluster).
//   - EndpointChange: a new pod and endpoint in a remote EndpointSlice
//     until the sidecar receives the load assignment holding it; the
//     median, 90th percentile and maximum over the changes of an op.
//   - Rotation: new credentials in a remote secret while that cluster's
//     endpoints keep changing (one every 150ms); ns/op (and rotation-ns)
//     is the time until the new client serves and the old one is
//     retired, then an endpoint written to the new client alone must
//     reach the sidecar. The sidecar asserts (b.Fatal) that none of the
//     cluster's endpoints leaves its EDS meanwhile; the endpoint index
//     is probed every 2ms for the same (b.Error), with the EDS updates of
//     the cluster's shard recorded as evidence. left-B/op is the heap
//     the rotation left behind (the old registry should be gone).
//
// MULTICLUSTER_BENCH_DEBOUNCE sets PILOT_DEBOUNCE_AFTER (default 100ms);
// MULTICLUSTER_BENCH_HEAPPROFILE writes a heap profile after Sync deleted
// the remote clusters again.
//
// How memory is attributed: the fake clients are built (and their
// trackers filled: the "API servers") before the baseline heap is read,
// and BuildClient hands out those very clients, so the heap difference
// "remote clusters synced − not yet added" is what istiod built on them
// (informer caches, collections, endpoint shards, push context, xDS
// state), not the trackers. The trackers' size is measured apart (heap
// after building the clients − before) and reported as
// tracker-B/cluster. Heaps are read after three full collections.
//
// How CPU is attributed: getrusage(RUSAGE_SELF) user+sys around the sync,
// minus the sidecar's receive thread (getrusage(RUSAGE_THREAD) on its
// locked OS thread: gRPC decoding and unmarshalling what istiod sent).
// What remains also holds the fake clientsets' List/Watch (deep copies,
// cheaper than a real client's decoding) and the garbage collection of
// the sidecar's allocations, so it is an upper bound of istiod's.
func BenchmarkMulticluster(b *testing.B) {
	// istiod logs every push at info: thousands of lines
	for _, sc := range log.Scopes() {
		if lvl := sc.Level(); lvl < log.WarnLevel {
			sc.SetLevel(log.WarnLevel)
			b.Cleanup(func() { sc.SetLevel(lvl) })
		}
	}
	env := newMCEnv(b)
	b.Cleanup(env.close)
	b.Run("Sync", env.benchSync)
	b.Run("EndpointChange", env.benchEndpointChange)
	b.Run("Rotation", env.benchRotation)
}

type mcEnv struct {
	sz       mcSize
	srv      *Server
	local    kube.Client
	clusters []*remoteCluster
	byID     map[string]*remoteCluster
	sidecar  *sidecar
	gen      map[string]int // credentials generation of each secret
	added    bool
	extra    atomic.Int64 // extra endpoint numbers handed out

	trackerBytes float64 // per cluster
	baseIdle     float64 // cores, without remote clusters
}

const idleWindow = 3 * time.Second

// debounceEnv sets PILOT_DEBOUNCE_AFTER's value (default 100ms): a
// shorter one pushes what the endpoint index holds sooner, and so lets
// the sidecar see what the index holds for a moment.
const debounceEnv = "MULTICLUSTER_BENCH_DEBOUNCE"

// heapProfileEnv names a file for the heap profile taken after the
// remote clusters were deleted again (what leak-B/cluster is made of).
const heapProfileEnv = "MULTICLUSTER_BENCH_HEAPPROFILE"

func newMCEnv(b *testing.B) *mcEnv {
	sz := benchSize(b)
	b.Logf("size: %d remote clusters × %d services (%d namespaces) × %d endpoints", sz.clusters, sz.services, sz.namespaces, sz.endpoints)
	env := &mcEnv{sz: sz, byID: map[string]*remoteCluster{}, gen: map[string]int{}}
	start := time.Now()
	for c := 0; c < sz.clusters; c++ {
		rc := newRemoteCluster(sz, c)
		env.clusters = append(env.clusters, rc)
		env.byID[rc.id] = rc
	}
	h0 := liveHeap()
	for _, rc := range env.clusters {
		rc.prepare()
	}
	env.trackerBytes = float64(int64(liveHeap())-int64(h0)) / float64(sz.clusters)
	b.Logf("fake clusters built in %v (%.1f MiB of fake clientsets per cluster)", time.Since(start).Round(time.Millisecond), env.trackerBytes/(1<<20))

	var local []k8sruntime.Object
	local = append(local, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-system"}})
	for n := 0; n < sz.namespaces; n++ {
		local = append(local, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%02d", n),
			Labels: map[string]string{"istio-injection": "enabled"}}})
	}
	env.local = kube.NewFakeClient(local...)
	args := tempArgs(b)
	if v := os.Getenv(debounceEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("%s=%q: %v", debounceEnv, v, err)
		}
		args.Debounce.After = d
	}
	args.Multicluster.BuildClient = func(_ []byte, id string) (kube.Client, error) {
		rc := env.byID[id]
		if rc == nil {
			return nil, fmt.Errorf("no cluster %s", id)
		}
		return rc.build(), nil
	}
	srv, err := newServerWithClient(args, env.local)
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	env.srv = srv
	poll(b, "istiod ready", time.Minute, func() (bool, string) {
		return srv.HasSynced() && srv.discovery.server.Ready(), "not synced"
	})
	if env.sidecar, err = startSidecar(srv.GRPCAddr()); err != nil {
		b.Fatal(err)
	}
	poll(b, "sidecar's first clusters", time.Minute, func() (bool, string) {
		return env.sidecar.cds.Load() > 0, fmt.Sprint(env.sidecar.failed())
	})
	time.Sleep(time.Second)
	env.baseIdle = idleCores()
	return env
}

func (env *mcEnv) close() {
	if env.sidecar != nil {
		env.sidecar.close()
	}
	if env.srv != nil {
		env.srv.Shutdown()
	}
}

// idleCores is the process's CPU over idleWindow, in cores.
func idleCores() float64 {
	c0, t0 := cpuTime(syscall.RUSAGE_SELF), time.Now()
	time.Sleep(idleWindow)
	return float64(cpuTime(syscall.RUSAGE_SELF)-c0) / float64(time.Since(t0))
}

func (env *mcEnv) secrets() interface {
	Create(context.Context, *corev1.Secret, metav1.CreateOptions) (*corev1.Secret, error)
	Update(context.Context, *corev1.Secret, metav1.UpdateOptions) (*corev1.Secret, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
} {
	return env.local.Kube().CoreV1().Secrets(env.srv.args.Namespace)
}

// registriesOf counts the registries of a cluster in the aggregate.
func (env *mcEnv) registriesOf(id string) int {
	n := 0
	for _, r := range env.srv.services.aggregate.Registries() {
		if r.Cluster() == id {
			n++
		}
	}
	return n
}

// addAll creates every remote secret and waits until each cluster synced
// and the sidecar holds all remote endpoints.
func (env *mcEnv) addAll(b *testing.B) {
	ctx := context.Background()
	for _, rc := range env.clusters {
		env.gen[rc.id]++
		if _, err := env.secrets().Create(ctx, remoteSecret(rc.id, env.srv.args.Namespace, env.gen[rc.id]), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	want := int64(env.sz.clusters * env.sz.endpoints)
	poll(b, "remote clusters synced and their endpoints at the sidecar", 10*time.Minute, func() (bool, string) {
		if err := env.sidecar.failed(); err != nil {
			b.Fatalf("sidecar: %v", err)
		}
		synced := 0
		for _, c := range env.srv.multicluster.Clusters() {
			if c.SyncStatus == multicluster.SyncStatusSynced {
				synced++
			}
		}
		got := env.sidecar.remote.Load()
		return synced == env.sz.clusters && got == want, fmt.Sprintf("%d/%d synced, sidecar holds %d/%d remote endpoints", synced, env.sz.clusters, got, want)
	})
	env.added = true
}

// removeAll deletes the remote secrets and waits until the clusters are
// gone from istiod and the sidecar; the clients are dropped and new ones
// prepared.
func (env *mcEnv) removeAll(b *testing.B) {
	ctx := context.Background()
	for _, rc := range env.clusters {
		if err := env.secrets().Delete(ctx, "istio-remote-secret-"+rc.id, metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	poll(b, "remote clusters removed", 5*time.Minute, func() (bool, string) {
		regs := 0
		for _, rc := range env.clusters {
			regs += env.registriesOf(rc.id)
		}
		got := env.sidecar.remote.Load()
		return len(env.srv.multicluster.Clusters()) == 0 && regs == 0 && got == 0,
			fmt.Sprintf("%d clusters, %d registries, sidecar holds %d remote endpoints", len(env.srv.multicluster.Clusters()), regs, got)
	})
	for _, rc := range env.clusters {
		rc.keepOnly(nil)
		rc.prepare()
	}
	env.added = false
}

func (env *mcEnv) ensureAdded(b *testing.B) {
	if !env.added {
		env.addAll(b)
		time.Sleep(time.Second)
	}
}

func (env *mcEnv) benchSync(b *testing.B) {
	n := float64(env.sz.clusters)
	var cpu time.Duration
	var base uint64
	var collections0 int
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		if env.added {
			env.removeAll(b)
		}
		time.Sleep(500 * time.Millisecond)
		collections0 = len(env.srv.krtDebug.Snapshot())
		base = liveHeap()
		cpu0, side0 := cpuTime(syscall.RUSAGE_SELF), env.sidecar.cpu.Load()
		b.StartTimer()
		env.addAll(b)
		b.StopTimer()
		cpu = cpuTime(syscall.RUSAGE_SELF) - cpu0 - time.Duration(env.sidecar.cpu.Load()-side0)
	}
	// what istiod keeps once the pushes of the sync are over
	time.Sleep(2 * time.Second)
	retained := float64(int64(liveHeap())-int64(base)) / n
	collections1 := len(env.srv.krtDebug.Snapshot())
	idle := idleCores()
	b.ReportMetric(retained, "B/cluster")
	b.ReportMetric(env.trackerBytes, "tracker-B/cluster")
	b.ReportMetric(cpu.Seconds()/n, "cpu-s/cluster")
	b.ReportMetric((idle-env.baseIdle)/n, "idle-cores/cluster")
	b.Logf("retained %.1f MiB per remote cluster (fake clientsets %.1f MiB apart), sync CPU %.2fs per cluster, idle %.4f cores with the remote clusters, %.4f without",
		retained/(1<<20), env.trackerBytes/(1<<20), cpu.Seconds()/n, idle, env.baseIdle)

	// the clusters gone, istiod should give back what it built on them
	env.removeAll(b)
	time.Sleep(2 * time.Second)
	leak := float64(int64(liveHeap())-int64(base)) / n
	b.ReportMetric(leak, "leak-B/cluster")
	if path := os.Getenv(heapProfileEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	b.Logf("heap after deleting the remote secrets: %+.1f MiB per cluster against before adding them", leak/(1<<20))
	b.Logf("collections on /debug/krtz: %d before adding the remote clusters, %d with them, %d after deleting them",
		collections0, collections1, len(env.srv.krtDebug.Snapshot()))
}

func (env *mcEnv) benchEndpointChange(b *testing.B) {
	b.StopTimer()
	env.ensureAdded(b)
	const perOp = 20
	var lat []time.Duration
	resp0, cla0 := env.sidecar.edsResp.Load(), env.sidecar.eds.Load()
	for i := 0; i < b.N; i++ {
		for k := 0; k < perOp; k++ {
			x := int(env.extra.Add(1))
			rc := env.clusters[x%len(env.clusters)]
			ref := env.sz.service((x * 7) % env.sz.services)
			ip := extraIP(rc.idx, x)
			pod := rc.pod(ref, "x"+strings.ReplaceAll(ip, ".", ""), ip, "node-0")
			if err := rc.write([]k8sruntime.Object{pod}, nil); err != nil {
				b.Fatal(err)
			}
			es := rc.sliceOf(ref)
			es.Endpoints = append(es.Endpoints, sliceEndpoint(pod, "zone"))
			arrived := env.sidecar.await(ref.cla(), ip, true)
			b.StartTimer()
			t0 := time.Now()
			if err := rc.write([]k8sruntime.Object{es}, nil); err != nil {
				b.Fatal(err)
			}
			select {
			case at := <-arrived:
				lat = append(lat, at.Sub(t0))
			case <-time.After(time.Minute):
				b.Fatalf("endpoint %s of %s in %s not at the sidecar after a minute (sidecar: %v)", ip, ref.host(), rc.id, env.sidecar.failed())
			}
			b.StopTimer()
			gone := env.sidecar.await(ref.cla(), ip, false)
			if err := rc.removeEndpoint(ref, ip); err != nil {
				b.Fatal(err)
			}
			select {
			case <-gone:
			case <-time.After(time.Minute):
				b.Fatalf("endpoint %s of %s still at the sidecar after a minute", ip, ref.host())
			}
		}
	}
	slices.Sort(lat)
	resps := env.sidecar.edsResp.Load() - resp0
	b.Logf("%d endpoint responses at the sidecar, %.0f load assignments each", resps, float64(env.sidecar.eds.Load()-cla0)/float64(max(resps, 1)))
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns/change")
	b.ReportMetric(float64(lat[len(lat)*9/10].Nanoseconds()), "p90-ns/change")
	b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds()), "max-ns/change")
}

// loadEvery paces the endpoint changes of the rotation's load.
const loadEvery = 150 * time.Millisecond

// edsRecorder records the EDS updates of one shard (the rotated
// cluster's registries) on their way to the endpoint index.
type edsRecorder struct {
	model.XDSUpdater
	shard model.ShardKey
	start time.Time
	mu    sync.Mutex
	calls map[string][]string // hostname → "+t:n endpoints"
}

func (r *edsRecorder) EDSUpdate(shard model.ShardKey, h, ns string, eps []*model.IstioEndpoint) {
	if shard == r.shard {
		r.mu.Lock()
		if r.calls == nil {
			r.calls = map[string][]string{}
		}
		r.calls[h] = append(r.calls[h], fmt.Sprintf("+%v:%d", time.Since(r.start).Round(time.Millisecond), len(eps)))
		r.mu.Unlock()
	}
	r.XDSUpdater.EDSUpdate(shard, h, ns, eps)
}

// String lists the updates of the first services of hosts ("+time:endpoints",
// an endpoint per port).
func (r *edsRecorder) String(hosts []string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, h := range slices.Compact(slices.Clone(hosts)) {
		if len(out) == 3 {
			break
		}
		out = append(out, fmt.Sprintf("%s: %s", h, strings.Join(r.calls[h], " ")))
	}
	return strings.Join(out, "; ")
}

// gaps collects what the rotation checks found missing.
type gaps struct {
	mu    sync.Mutex
	n     int
	first []string
	hosts []string // of the first ones
}

func (g *gaps) add(host, format string, a ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	if len(g.first) < 10 {
		g.first = append(g.first, fmt.Sprintf(format, a...))
		g.hosts = append(g.hosts, host)
	}
}

func (g *gaps) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return fmt.Sprintf("%d, first: %s", g.n, strings.Join(g.first, "; "))
}

func (env *mcEnv) benchRotation(b *testing.B) {
	b.StopTimer()
	env.ensureAdded(b)
	var rotations []time.Duration
	var writes, edsSeen, leftBytes int64
	for i := 0; i < b.N; i++ {
		rc := env.clusters[i%len(env.clusters)]
		heap0, collections0 := liveHeap(), len(env.srv.krtDebug.Snapshot())
		rc.prepare()
		byCLA := map[string][]string{}
		for ref, ips := range rc.baseline {
			byCLA[ref.cla()] = ips
		}
		start := time.Now()
		// the sidecar: every load assignment of a service of the cluster
		// holds all of the cluster's endpoints of before the rotation
		var sidecarGaps, indexGaps gaps
		eds0 := env.sidecar.eds.Load()
		env.sidecar.setCheck(func(name string, ips map[string]bool, at time.Time) {
			want := byCLA[name]
			missing := 0
			for _, ip := range want {
				if !ips[ip] {
					missing++
				}
			}
			if missing > 0 {
				sidecarGaps.add(strings.TrimPrefix(name, "outbound|80||"), "%s lost %d of its %d endpoints in %s at +%v", name, missing, len(want), rc.id, at.Sub(start).Round(time.Millisecond))
			}
		})
		// the endpoint index: the cluster's shard of each service
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		shard := model.NewShardKey(model.Kubernetes, rc.id)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
				for ref, want := range rc.baseline {
					eps := map[string]bool{}
					if sh, ok := env.srv.services.index.ShardsFor(ref.host(), ref.ns); ok {
						for _, e := range sh.Endpoints(shard) {
							eps[e.FirstAddress()] = true
						}
					}
					missing := 0
					for _, ip := range want {
						if !eps[ip] {
							missing++
						}
					}
					if missing > 0 {
						indexGaps.add(ref.host(), "index: %s lost %d of %d endpoints of %s at +%v", ref.host(), missing, len(want), rc.id, time.Since(start).Round(time.Millisecond))
					}
				}
			}
		}()
		// the load: every 150ms (beyond the 100ms debounce, so that pushes
		// go out between changes) an endpoint added to or removed from
		// the next service of the cluster, written to every client of it
		var loadErr atomic.Value
		var nWrites atomic.Int64
		go func() {
			defer wg.Done()
			present := map[svcRef]string{}
			defer func() {
				for ref, ip := range present {
					if err := rc.removeEndpoint(ref, ip); err != nil {
						loadErr.Store(err)
					}
				}
			}()
			for t := 0; ; t++ {
				select {
				case <-stop:
					return
				case <-time.After(loadEvery):
				}
				ref := env.sz.service(t % (env.sz.services - 1))
				var err error
				if ip, ok := present[ref]; ok {
					err = rc.removeEndpoint(ref, ip)
					delete(present, ref)
				} else {
					ip := extraIP(rc.idx, int(env.extra.Add(1)))
					err = rc.addEndpoint(ref, ip)
					present[ref] = ip
				}
				if err != nil {
					loadErr.Store(err)
					return
				}
				nWrites.Add(1)
			}
		}()
		// what the cluster's registries write to the endpoint index
		rec := &edsRecorder{XDSUpdater: env.srv.services.updater, shard: shard, start: start}
		env.srv.services.updater = rec
		time.Sleep(300 * time.Millisecond)

		old := env.srv.multicluster.Cluster(rc.id)
		env.gen[rc.id]++
		sec := remoteSecret(rc.id, env.srv.args.Namespace, env.gen[rc.id])
		b.StartTimer()
		t0 := time.Now()
		if _, err := env.secrets().Update(context.Background(), sec, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		var cur *multicluster.Cluster
		poll(b, "the rotated cluster served by its new client", 5*time.Minute, func() (bool, string) {
			cur = env.srv.multicluster.Cluster(rc.id)
			ok := cur != nil && cur != old && cur.SyncStatus() == multicluster.SyncStatusSynced &&
				old.SyncStatus() == multicluster.SyncStatusClosed && env.registriesOf(rc.id) == 1
			return ok, fmt.Sprintf("old %s, registries %d", old.SyncStatus(), env.registriesOf(rc.id))
		})
		rot := time.Since(t0)
		b.StopTimer()
		rotations = append(rotations, rot)
		rc.keepOnly(cur.Client)

		// the new client serves: an endpoint written to it alone arrives
		ref := env.sz.service(env.sz.services - 1)
		ip := extraIP(rc.idx, int(env.extra.Add(1)))
		arrived := env.sidecar.await(ref.cla(), ip, true)
		tw := time.Now()
		if err := rc.addEndpoint(ref, ip); err != nil {
			b.Fatal(err)
		}
		var served time.Duration
		select {
		case at := <-arrived:
			served = at.Sub(tw)
		case <-time.After(time.Minute):
			b.Fatalf("after the rotation, endpoint %s written to the new client of %s is not at the sidecar", ip, rc.id)
		}
		time.Sleep(300 * time.Millisecond) // the load goes on after the rotation
		close(stop)
		wg.Wait()
		env.sidecar.setCheck(nil)
		env.srv.services.updater = rec.XDSUpdater
		if err := rc.removeEndpoint(ref, ip); err != nil {
			b.Fatal(err)
		}
		if err, ok := loadErr.Load().(error); ok {
			b.Fatalf("load: %v", err)
		}
		if err := env.sidecar.failed(); err != nil {
			b.Fatalf("sidecar: %v", err)
		}
		// the old client's registry should be gone: what is left of it
		// (the new client replaces the old one in the fake's memory too)
		time.Sleep(time.Second)
		left := int64(liveHeap()) - int64(heap0)
		leftBytes += left
		b.Logf("after the rotation: %+.1f MiB of heap, %d collections on /debug/krtz (%d before)",
			float64(left)/(1<<20), len(env.srv.krtDebug.Snapshot()), collections0)
		writes += nWrites.Load()
		edsSeen += env.sidecar.eds.Load() - eds0
		b.Logf("rotation of %s: %v, then an endpoint of the new client at the sidecar in %v; %d endpoint writes meanwhile, %d load assignments checked at the sidecar",
			rc.id, rot.Round(time.Millisecond), served.Round(time.Millisecond), nWrites.Load(), env.sidecar.eds.Load()-eds0)
		if indexGaps.n > 0 {
			b.Errorf("the endpoint index lost endpoints of %s during its rotation: %s\nupdates of the cluster's shard: %s",
				rc.id, indexGaps.String(), rec.String(indexGaps.hosts))
		}
		if sidecarGaps.n > 0 {
			b.Fatalf("the sidecar lost endpoints of %s during its rotation (the secret updated at +%v, the old client retired at +%v): %s\nupdates of the cluster's shard: %s",
				rc.id, t0.Sub(start).Round(time.Millisecond), t0.Add(rot).Sub(start).Round(time.Millisecond), sidecarGaps.String(), rec.String(sidecarGaps.hosts))
		}
	}
	slices.Sort(rotations)
	b.ReportMetric(float64(rotations[len(rotations)/2].Nanoseconds()), "rotation-ns")
	b.ReportMetric(float64(leftBytes)/float64(b.N), "left-B/op")
	b.ReportMetric(float64(writes)/float64(b.N), "writes/op")
	b.ReportMetric(float64(edsSeen)/float64(b.N), "checked-cla/op")
}
