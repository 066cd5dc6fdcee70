package xds

import (
	"context"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// soakGenerators serve clusters named after the proxy's namespace and a
// load assignment for every subscribed name, as a mesh's generators do, so
// that what clients send (names, namespaces) reaches every table that
// could keep it.
func soakGenerators(s *DiscoveryServer) {
	enc := s.Encodings()
	s.RegisterGenerator(ClusterType, GeneratorFunc(func(p *model.Proxy, _ *WatchedResource, _ *model.PushRequest) (Generated, error) {
		var out Generated
		for i := range 50 {
			name := fmt.Sprintf("outbound|80||svc-%d.%s.svc.cluster.local", i, p.ConfigNamespace)
			out.Resources = append(out.Resources, enc.NewResource(ClusterType, name, []byte(name)))
		}
		return out, nil
	}))
	s.RegisterGenerator(EndpointType, GeneratorFunc(func(_ *model.Proxy, w *WatchedResource, _ *model.PushRequest) (Generated, error) {
		var out Generated
		for _, n := range w.Names() {
			out.Resources = append(out.Resources, enc.NewResource(EndpointType, n, []byte(n)))
		}
		return out, nil
	}))
}

func randomName(r *rand.Rand, n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[r.Intn(len(letters))]
	}
	return string(b)
}

// soakStream opens a delta stream of a proxy in namespace ns, subscribes
// to every cluster and to names' load assignments, reads both answers,
// then changes its subscription once and closes.
func soakStream(ctx context.Context, cc *grpc.ClientConn, ns string, names []string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).DeltaAggregatedResources(ctx)
	if err != nil {
		return err
	}
	meta, _ := structpb.NewStruct(map[string]any{"NAMESPACE": ns})
	node := &core.Node{Id: "sidecar~10.1.2.3~app-" + ns + "." + ns + "~" + ns + ".svc.cluster.local", Metadata: meta}
	reqs := []*discovery.DeltaDiscoveryRequest{
		{Node: node, TypeUrl: ClusterType},
		{TypeUrl: EndpointType, ResourceNamesSubscribe: names, InitialResourceVersions: map[string]string{names[0]: "held"}},
	}
	for _, req := range reqs {
		if err := st.Send(req); err != nil {
			return err
		}
		if _, err := st.Recv(); err != nil {
			return err
		}
	}
	half := len(names) / 2
	if err := st.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: EndpointType, ResourceNamesUnsubscribe: names[:half],
		ResourceNamesSubscribe: []string{names[0] + "-again"}}); err != nil {
		return err
	}
	if _, err := st.Recv(); err != nil {
		return err
	}
	return st.CloseSend()
}

// heapInUse is the live heap after collection.
func heapInUse() uint64 {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func watchedSetCount() int {
	watchedSets.mu.Lock()
	defer watchedSets.mu.Unlock()
	n := 0
	for _, ps := range watchedSets.m {
		n += len(ps)
	}
	return n
}

// Streams opened and closed on the open port with random names and random
// namespaces leave nothing behind: once they are gone, the tables their
// names and namespaces reached (the sent-version bases, the subscriptions,
// the interned names, the encodings) and the heap are back where they
// started. (An intern table whose bound doubled on every reset, and bases
// kept per namespace forever, grew here by megabytes.)
func TestSoakStreamsLeaveNothingBehind(t *testing.T) {
	s := NewDiscoveryServer()
	soakGenerators(s)
	s.SetPushContext(model.NewPushContext())
	addr := serveInternal(t, s)
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	r := rand.New(rand.NewSource(42))
	round := func(streams, names int) {
		jobs := make([][]string, streams)
		nss := make([]string, streams)
		for i := range jobs {
			nss[i] = "ns-" + randomName(r, 12)
			for range names {
				jobs[i] = append(jobs[i], "outbound|80||"+randomName(r, 40)+".svc.cluster.local")
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, streams)
		for i := range jobs {
			wg.Go(func() { errs <- soakStream(context.Background(), cc, nss[i], jobs[i]) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, "every stream is closed", func() bool { return len(s.Connections()) == 0 })
	}
	round(20, 300) // warm the pools of gRPC and the runtime
	goroutines := runtime.NumGoroutine()
	settled(t, goroutines, func() bool { return true })
	base := heapInUse()
	for range 8 {
		round(20, 300)
	}
	// the streams' goroutines end after their connections are removed, and
	// the subscriptions' cleanups run after a collection: wait for both
	const slack = 2 << 20
	var heap uint64
	settled(t, goroutines, func() bool {
		heap = heapInUse()
		return watchedSetCount() == 0 && heap <= base+slack
	})
	if scopes, bases := s.sent.size(); scopes != 0 || bases != 0 {
		t.Errorf("the server keeps %d scopes with %d bases of sent versions after their connections closed", scopes, bases)
	}
	if n := watchedSetCount(); n != 0 {
		t.Errorf("%d subscriptions are still interned", n)
	}
	if heap > base+slack {
		t.Errorf("the live heap grew from %d to %d bytes over 160 closed streams (allowed %d)", base, heap, slack)
	}
}

// settled waits, for up to 20s, until no more goroutines run than before
// and cond holds (then or at the deadline, the caller checks what it
// needs).
func settled(t *testing.T, goroutines int, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if runtime.NumGoroutine() <= goroutines && cond() {
			return
		}
	}
}
