package kube_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	registry "github.com/meshplane/istiod/pilot/pkg/serviceregistry/kube"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// mesh is a synthetic cluster: services × endpoints, one slice per service,
// one pod per endpoint, spread over namespaces and nodes.
type mesh struct {
	services []*corev1.Service
	slices   []*discoveryv1.EndpointSlice
	pods     []*corev1.Pod
	nodes    []*corev1.Node
	ns       []*corev1.Namespace
}

func buildMesh(services, endpoints int) *mesh {
	m := &mesh{}
	for i := 0; i < 10; i++ {
		m.nodes = append(m.nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i),
			Labels: map[string]string{model.RegionLabel: "r1", model.ZoneLabel: fmt.Sprintf("z%d", i%3)}}})
	}
	for s := 0; s < services; s++ {
		ns := fmt.Sprintf("ns-%d", s/100)
		if s%100 == 0 {
			m.ns = append(m.ns, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
		name := fmt.Sprintf("svc-%d", s)
		m.services = append(m.services, service(ns, name, fmt.Sprintf("10.96.%d.%d", s/250, s%250),
			map[string]string{"app": name}, port("http", 8080), port("grpc", 9090)))
		es := slice(ns, name+"-1", name, []discoveryv1.EndpointPort{slicePort("http", 8080), slicePort("grpc", 9090)})
		for e := 0; e < endpoints; e++ {
			ip := fmt.Sprintf("10.%d.%d.%d", s/1000, (s%1000)/4, (s%4)*50+e)
			p := pod(ns, fmt.Sprintf("%s-%d", name, e), ip, map[string]string{"app": name, "version": "v1"})
			p.Spec.NodeName = m.nodes[(s+e)%len(m.nodes)].Name
			p.Spec.ServiceAccountName = name
			m.pods = append(m.pods, p)
			es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)},
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p.Name}})
		}
		m.slices = append(m.slices, es)
	}
	return m
}

// edsCounter applies EDSUpdates to an endpoint index, counts them per
// hostname and signals each one.
type edsCounter struct {
	index  *model.EndpointIndex
	mu     sync.Mutex
	counts map[string]int
	total  atomic.Int64
	ch     chan string
}

func newEDSCounter() *edsCounter {
	return &edsCounter{index: model.NewEndpointIndex(), counts: map[string]int{}, ch: make(chan string, 1024)}
}

func (c *edsCounter) EDSUpdate(shard model.ShardKey, h, ns string, eps []*model.IstioEndpoint) {
	c.index.UpdateServiceEndpoints(shard, h, ns, eps)
	c.mu.Lock()
	c.counts[h]++
	c.mu.Unlock()
	c.total.Add(1)
	select {
	case c.ch <- h:
	default:
	}
}
func (c *edsCounter) SvcUpdate(model.ShardKey, string, string, model.Event) {}
func (c *edsCounter) ConfigUpdate(*model.PushRequest)                       {}
func (c *edsCounter) ProxyUpdate(string, string)                            {}
func (c *edsCounter) RemoveShard(model.ShardKey)                            {}

type benchRegistry struct {
	reg    *registry.Controller
	slices krt.StaticCollection[*discoveryv1.EndpointSlice]
	eds    *edsCounter
	debug  *krt.DebugHandler
}

func startRegistry(tb testing.TB, m *mesh, stop chan struct{}) *benchRegistry {
	br := &benchRegistry{eds: newEDSCounter(), debug: &krt.DebugHandler{MaxKeys: 1},
		slices: krt.NewStaticCollection(m.slices)}
	in := registry.Inputs{
		Services:       krt.NewStaticCollection(m.services),
		EndpointSlices: br.slices,
		Pods:           krt.NewStaticCollection(m.pods),
		Nodes:          krt.NewStaticCollection(m.nodes),
		Namespaces:     krt.NewStaticCollection(m.ns),
	}
	br.reg = registry.NewFromCollections(in, registry.Options{XDSUpdater: br.eds, Stop: stop, Krt: br.debug})
	for !br.reg.HasSynced() {
		time.Sleep(time.Millisecond)
	}
	br.drain()
	return br
}

// drain drops the signals of the initial updates.
func (br *benchRegistry) drain() {
	for {
		select {
		case <-br.eds.ch:
		default:
			return
		}
	}
}

// transforms returns the transform runs of a collection of the registry.
func (br *benchRegistry) transforms(name string) int64 {
	for _, s := range br.debug.Snapshot() {
		if s.Name == name {
			return s.Transforms
		}
	}
	return -1
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkRegistryBuild: 5,000 services × 10 endpoints (50,000 pods) from
// nothing to every EDS update delivered; heap-MB is what the registry holds
// beyond its input objects.
func BenchmarkRegistryBuild(b *testing.B) {
	m := buildMesh(5000, 10)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		before := heapInUse()
		stop := make(chan struct{})
		b.StartTimer()
		br := startRegistry(b, m, stop)
		b.StopTimer()
		if got := br.eds.total.Load(); got < 5000 {
			b.Fatalf("EDS updates: %d", got)
		}
		b.ReportMetric(float64(heapInUse()-before)/(1<<20), "heap-MB")
		runtime.KeepAlive(br)
		close(stop)
		b.StartTimer()
	}
}

// BenchmarkRegistryEndpointUpdate: one endpoint of one service changes in a
// 5,000 × 10 registry; time until its EDS update. It fails when any other
// service is recomputed or updated.
func BenchmarkRegistryEndpointUpdate(b *testing.B) {
	m := buildMesh(5000, 10)
	stop := make(chan struct{})
	defer close(stop)
	br := startRegistry(b, m, stop)
	target := m.slices[2500]
	host := registry.ServiceHostname(target.Labels[discoveryv1.LabelServiceName], target.Namespace, "cluster.local")
	svcRuns, sliceRuns := br.transforms("kube-registry/services"), br.transforms("kube-registry/endpoint-slices")
	startTotal := br.eds.total.Load()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		next := target.DeepCopy()
		next.ResourceVersion = fmt.Sprint(i)
		next.Endpoints[0].Conditions.Ready = ptr(i%2 == 1) // flip readiness (ready at start)
		br.slices.Set(next)
		select {
		case h := <-br.eds.ch:
			if h != host {
				b.Fatalf("EDS update of unrelated service %s", h)
			}
		case <-time.After(30 * time.Second):
			b.Fatal("no EDS update")
		}
	}
	b.StopTimer()
	if got := br.eds.total.Load() - startTotal; got != int64(b.N) {
		b.Fatalf("EDS updates: %d for %d changes", got, b.N)
	}
	if d := br.transforms("kube-registry/services") - svcRuns; d != 0 {
		b.Fatalf("services recomputed %d times", d)
	}
	if d := br.transforms("kube-registry/endpoint-slices") - sliceRuns; d != int64(b.N) {
		b.Fatalf("slices recomputed %d times for %d changes", d, b.N)
	}
}

// TestEndpointUpdateTouchesOneService is the benchmark's assertion at a
// small scale, run with the tests.
func TestEndpointUpdateTouchesOneService(t *testing.T) {
	m := buildMesh(200, 3)
	stop := make(chan struct{})
	defer close(stop)
	br := startRegistry(t, m, stop)
	target := m.slices[50]
	host := registry.ServiceHostname(target.Labels[discoveryv1.LabelServiceName], target.Namespace, "cluster.local")
	svcRuns, sliceRuns, total := br.transforms("kube-registry/services"), br.transforms("kube-registry/endpoint-slices"), br.eds.total.Load()
	next := target.DeepCopy()
	next.Endpoints = next.Endpoints[:2]
	br.slices.Set(next)
	select {
	case h := <-br.eds.ch:
		if h != host {
			t.Fatalf("EDS update of %s", h)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no EDS update")
	}
	if br.eds.total.Load()-total != 1 || br.transforms("kube-registry/services") != svcRuns ||
		br.transforms("kube-registry/endpoint-slices") != sliceRuns+1 {
		t.Fatalf("unrelated work: eds %d, services runs %d→%d, slice runs %d→%d", br.eds.total.Load()-total, svcRuns,
			br.transforms("kube-registry/services"), sliceRuns, br.transforms("kube-registry/endpoint-slices"))
	}
}
