package xds

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/tests/testproc"
)

// bigClusters answers every cluster request with a new 1 MB resource: more
// than a client's flow-control window, so a client that does not read
// blocks the second send to it.
func bigClusters(enc *Encodings) Generator {
	return GeneratorFunc(func(*model.Proxy, *WatchedResource, *model.PushRequest) (Generated, error) {
		b := make([]byte, 1<<20)
		_, _ = rand.Read(b)
		return Generated{Resources: []*discovery.Resource{enc.NewResource(ClusterType, "big", b)}}, nil
	})
}

// serveInternal serves s on a loopback port until the test ends.
func serveInternal(t *testing.T, s *DiscoveryServer) string {
	t.Helper()
	g := grpc.NewServer(s.GRPCServerOptions()...)
	s.Register(g)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(l) }()
	t.Cleanup(g.Stop)
	return l.Addr().String()
}

// openDelta opens a delta stream as node ip and subscribes to clusters.
// The client's windows are fixed at 64 KiB (no growth from bandwidth
// estimates), so that one that stops reading stops the server's sends.
func openDelta(t *testing.T, ctx context.Context, addr, ip string) discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).DeltaAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := &core.Node{Id: "sidecar~" + ip + "~app.default~default.svc.cluster.local"}
	if err := st.Send(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: ClusterType}); err != nil {
		t.Fatal(err)
	}
	return st
}

// eventually polls cond until it holds, failing the test after 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testproc.Eventually(t, 10*time.Second, what, func() (bool, string) { return cond(), "" })
}

func sentClusters(s *DiscoveryServer, ip string) bool {
	for _, c := range s.Connections() {
		if c.Proxy().HasIP(ip) {
			w := c.Watched(ClusterType)
			return w != nil && w.NonceSent != ""
		}
	}
	return false
}

func connected(s *DiscoveryServer, ip string) bool {
	for _, c := range s.Connections() {
		if c.Proxy().HasIP(ip) {
			return true
		}
	}
	return false
}

// A client that stops reading holds its push slot only until the send
// deadline: its stream ends with DeadlineExceeded, the timeout is counted
// as Istio's pilot_xds_write_timeout, and the other proxies' pushes go on.
func TestStuckClientReleasesPushSlot(t *testing.T) {
	s := NewDiscoveryServer()
	s.SetPushThrottle(1)
	s.SetSendTimeout(300 * time.Millisecond)
	s.RegisterGenerator(ClusterType, bigClusters(s.Encodings()))
	s.SetPushContext(model.NewPushContext())
	addr := serveInternal(t, s)
	before := testutil.ToFloat64(writeTimeouts)

	stuck := openDelta(t, context.Background(), addr, "10.0.0.1") // never reads
	eventually(t, "the stuck client's first response is sent", func() bool { return sentClusters(s, "10.0.0.1") })
	s.ProxyUpdate("", "10.0.0.1")
	eventually(t, "the stuck client's push holds the only slot", func() bool { return len(s.throttle.slots) == 1 })

	reader := openDelta(t, context.Background(), addr, "10.0.0.2")
	if _, err := reader.Recv(); err != nil {
		t.Fatal(err)
	}
	s.ProxyUpdate("", "10.0.0.2") // waits for the slot
	got := make(chan error, 1)
	go func() {
		_, err := reader.Recv()
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a client that stopped reading held the push slot: no other proxy was pushed")
	}
	if d := testutil.ToFloat64(writeTimeouts) - before; d != 1 {
		t.Errorf("pilot_xds_write_timeout rose by %v, want 1", d)
	}
	eventually(t, "the stuck stream is closed", func() bool { return !connected(s, "10.0.0.1") })
	var err error
	for err == nil {
		_, err = stuck.Recv() // what was written before the deadline, then the status
	}
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("the stuck stream ended with %v, want DeadlineExceeded", err)
	}
}

// A stream waiting for a push slot gives it up when the client goes away:
// nothing of the stream is left waiting.
func TestPushSlotWaitEndsWithStream(t *testing.T) {
	s := NewDiscoveryServer()
	s.SetPushThrottle(1)
	s.RegisterGenerator(ClusterType, bigClusters(s.Encodings()))
	s.SetPushContext(model.NewPushContext())
	addr := serveInternal(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := openDelta(t, ctx, addr, "10.0.0.3")
	if _, err := c.Recv(); err != nil {
		t.Fatal(err)
	}
	if !s.throttle.TryAcquire() { // every slot busy
		t.Fatal("the slot is taken")
	}
	defer s.throttle.Release()
	s.ProxyUpdate("", "10.0.0.3")
	cancel()
	eventually(t, "the stream waiting for a slot ends with its client", func() bool { return !connected(s, "10.0.0.3") })
	if _, err := c.Recv(); !errors.Is(err, context.Canceled) && status.Code(err) != codes.Canceled {
		t.Errorf("client: %v", err)
	}
}

// Two servers in one process share none of their state: the bases of
// sent versions, the refusal log and the encodings are each server's own.
func TestServersShareNothing(t *testing.T) {
	a, b := NewDiscoveryServer(), NewDiscoveryServer()
	if !a.refusals.firstFor("10.0.0.9", "bad token") || !b.refusals.firstFor("10.0.0.9", "bad token") {
		t.Error("a refusal logged by one server silenced the other's")
	}
	sc := sentScope{proxyType: "sidecar", namespace: "shop"}
	a.sent.join(sc)
	b.sent.join(sc)
	a.sent.after(sc, ClusterType, []*discovery.Resource{{Name: "c", Version: "1"}}, func(int) string { return "1" }, nil, nil)
	if b.sent.get(sc, ClusterType) != nil {
		t.Error("one server's base of sent versions is another's")
	}
	res := a.Encodings().NewResource(ClusterType, "c", []byte("value"))
	if a.Encodings().encoding(res) == nil || b.Encodings().encoding(res) != nil {
		t.Error("the encodings of one server's resources are held by another")
	}
}
