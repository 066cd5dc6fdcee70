package xds_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/log"
)

// benchClientsEnv, set in a child process of the test binary, makes it the
// fleet of sidecars of BenchmarkBytesPerConnection instead of running
// tests: "address connections", one line "ready" on stdout once every
// sidecar has its config, and it exits when stdin closes.
const benchClientsEnv = "XDS_BENCH_SIDECARS"

func TestMain(m *testing.M) {
	if spec := os.Getenv(benchClientsEnv); spec != "" {
		if err := runSidecars(spec); err != nil {
			fmt.Fprintln(os.Stderr, "sidecars:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// memMesh is a generated mesh's config as the generators' caches hold it:
// every resource built and marshalled once, with its version, and shared by
// every connection. Sizes are those of the load test's mesh: three clusters
// per service (~1.1 kB each), a load assignment per EDS cluster, two
// listeners, one route configuration for the HTTP port; each proxy also
// gets an inbound cluster and listener of its own.
type memMesh struct {
	clusters  []*discovery.Resource
	endpoints map[string]*discovery.Resource
	listeners []*discovery.Resource
	routes    map[string]*discovery.Resource
}

func resource(enc *xds.Encodings, r *rand.Rand, typeURL, name string, size int) *discovery.Resource {
	b := make([]byte, size)
	r.Read(b)
	return enc.NewResource(typeURL, name, b)
}

func newMemMesh(enc *xds.Encodings, services int) *memMesh {
	r := rand.New(rand.NewSource(1))
	m := &memMesh{endpoints: map[string]*discovery.Resource{}, routes: map[string]*discovery.Resource{}}
	for i := 0; i < services; i++ {
		host := fmt.Sprintf("svc-%d.ns-%d.svc.cluster.local", i, i%10)
		for _, subset := range []string{"", "v1", "v2"} {
			name := "outbound|8080|" + subset + "|" + host
			m.clusters = append(m.clusters, resource(enc, r, xds.ClusterType, name, 1100))
			m.endpoints[name] = resource(enc, r, xds.EndpointType, name, 150)
		}
	}
	for _, n := range []string{"virtualOutbound", "virtualInbound"} {
		m.listeners = append(m.listeners, resource(enc, r, xds.ListenerType, n, 6000))
	}
	m.routes["8080"] = resource(enc, r, xds.RouteType, "8080", 300*services)
	return m
}

func (m *memMesh) register(ds *xds.DiscoveryServer) {
	named := func(by map[string]*discovery.Resource) xds.GeneratorFunc {
		return func(_ *model.Proxy, w *xds.WatchedResource, _ *model.PushRequest) (xds.Generated, error) {
			var out xds.Generated
			for _, n := range w.Names() {
				if r := by[n]; r != nil {
					out.Resources = append(out.Resources, r)
				}
			}
			return out, nil
		}
	}
	// the shared resources plus one of the proxy's own (its inbound
	// cluster or listener: content that names the workload), built per
	// push as the generators build them
	all := func(rs []*discovery.Resource, typeURL, own string, size int) xds.GeneratorFunc {
		return func(p *model.Proxy, _ *xds.WatchedResource, _ *model.PushRequest) (xds.Generated, error) {
			b := bytes.Repeat([]byte(p.ID), size/len(p.ID)+1)[:size]
			mine := &discovery.Resource{Name: own, Version: xds.ContentVersion(b), Resource: &anypb.Any{TypeUrl: typeURL, Value: b}}
			out := append(make([]*discovery.Resource, 0, len(rs)+1), mine)
			copy(out[1:cap(out)], rs)
			return xds.Generated{Resources: out[:cap(out)]}, nil
		}
	}
	ds.RegisterGenerator(xds.ClusterType, all(m.clusters, xds.ClusterType, "inbound|8080||", 900))
	ds.RegisterGenerator(xds.EndpointType, named(m.endpoints))
	ds.RegisterGenerator(xds.ListenerType, all(m.listeners, xds.ListenerType, "10.2.0.1_8080", 3000))
	ds.RegisterGenerator(xds.RouteType, named(m.routes))
}

// writeHeapProfile writes the heap profile (XDS_BENCH_HEAPPROFILE names
// the file) with the sidecars connected: where the bytes per connection
// are.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

func heapAfterGC() runtime.MemStats {
	var ms runtime.MemStats
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms
}

// BenchmarkBytesPerConnection measures what istiod's wire layer keeps per
// connected sidecar beyond the shared config: 100 delta sidecars (in a
// child process, so that only the server's memory is counted) fetch their
// full config of a 1,000-service mesh and ACK it; then the heap in use and
// the goroutine stacks, after GC, less what they were with one sidecar
// connected (which built what all share), divided by the sidecars. The
// config itself is built once and shared by every connection, as the
// generators' caches share it. XDS_BENCH_HEAPPROFILE=file writes the heap
// profile with the sidecars connected.
func BenchmarkBytesPerConnection(b *testing.B) {
	const services, sidecars = 1000, 100
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	// one log line per connection would drown the figures
	if ads, ok := log.FindScope("ads"); ok {
		defer ads.SetLevel(ads.Level())
		ads.SetLevel(log.WarnLevel)
	}
	for i := 0; i < b.N; i++ {
		s := xdstest.NewServer(b)
		newMemMesh(s.DS.Encodings(), services).register(s.DS)
		s.DS.SetPushContext(model.NewPushContext())
		// a first sidecar makes what all of them share (the encodings of
		// the cached resources) before the count starts
		warm := startFleet(b, exe, s.Addr, 1)
		before := heapAfterGC()
		fleet := startFleet(b, exe, s.Addr, sidecars)
		if got := len(s.DS.Connections()); got != sidecars+1 {
			b.Fatalf("%d connections, want %d", got, sidecars+1)
		}
		after := heapAfterGC()
		if path := os.Getenv("XDS_BENCH_HEAPPROFILE"); path != "" {
			writeHeapProfile(b, path)
		}
		fleet.stop(b)
		warm.stop(b)
		heap := float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / sidecars
		stack := float64(int64(after.StackInuse)-int64(before.StackInuse)) / sidecars
		b.ReportMetric(heap, "heap-B/conn")
		b.ReportMetric(stack, "stack-B/conn")
		b.ReportMetric(heap+stack, "B/conn")
	}
}

// fleet is a child process running sidecars.
type fleet struct {
	cmd   *exec.Cmd
	stdin io.Closer
}

// startFleet starts a child process that connects n sidecars to addr, and
// returns once they all have their config.
func startFleet(b *testing.B, exe, addr string, n int) *fleet {
	child := exec.Command(exe, "-test.run=^$")
	child.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", benchClientsEnv, addr, n))
	child.Stderr = os.Stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = child.Process.Kill()
		_ = child.Wait()
		b.Fatalf("sidecars did not get their config: %q %v", line, err)
	}
	return &fleet{cmd: child, stdin: stdin}
}

// stop disconnects the fleet's sidecars and waits for the process to end.
func (f *fleet) stop(b *testing.B) {
	f.stdin.Close()
	if err := f.cmd.Wait(); err != nil {
		b.Fatal(err)
	}
}

// runSidecars connects the sidecars of spec ("address count") and walks
// each through a sidecar's startup over delta ADS: CDS, EDS for every
// outbound cluster, LDS, RDS for port 8080, each ACKed. It prints "ready"
// once all have their config and keeps the streams open until stdin closes.
func runSidecars(spec string) error {
	addr, countStr, _ := strings.Cut(spec, " ")
	count, err := strconv.Atoi(countStr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	errs := make(chan error, count)
	slots := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := 0; i < count; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			errs <- sidecar(ctx, addr, i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// sidecar fetches one sidecar's config; its stream stays open (until ctx
// ends) so that the server keeps the connection.
func sidecar(ctx context.Context, addr string, i int) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
	if err != nil {
		return err
	}
	ns := fmt.Sprintf("ns-%d", i%10)
	md, err := structpb.NewStruct(map[string]any{"NAMESPACE": ns,
		"LABELS": map[string]any{"app": fmt.Sprintf("svc-%d", i), "version": "v1"}})
	if err != nil {
		return err
	}
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		return err
	}
	node := &core.Node{Id: fmt.Sprintf("sidecar~10.2.%d.%d~pod-%d.%s~%s.svc.cluster.local", i/256, i%256, i, ns, ns), Metadata: md}
	step := func(req *discovery.DeltaDiscoveryRequest) (*discovery.DeltaDiscoveryResponse, error) {
		if err := stream.Send(req); err != nil {
			return nil, err
		}
		resp, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		if resp.TypeUrl != req.TypeUrl || len(resp.Resources) == 0 {
			return nil, fmt.Errorf("asked for %s, got %d of %s", req.TypeUrl, len(resp.Resources), resp.TypeUrl)
		}
		return resp, stream.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: resp.TypeUrl, ResponseNonce: resp.Nonce})
	}
	cds, err := step(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: xds.ClusterType})
	if err != nil {
		return err
	}
	var eds []string
	for _, r := range cds.Resources {
		eds = append(eds, r.Name)
	}
	for _, req := range []*discovery.DeltaDiscoveryRequest{
		{TypeUrl: xds.EndpointType, ResourceNamesSubscribe: eds},
		{TypeUrl: xds.ListenerType},
		{TypeUrl: xds.RouteType, ResourceNamesSubscribe: []string{"8080"}},
	} {
		if _, err := step(req); err != nil {
			return err
		}
	}
	return nil
}
