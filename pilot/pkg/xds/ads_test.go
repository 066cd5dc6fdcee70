package xds_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

const timeout = xdstest.Timeout

// world is what the test generators serve.
type world struct {
	mu       sync.Mutex
	clusters []string
	invalid  map[string]string
}

func (w *world) set(names ...string) {
	w.mu.Lock()
	w.clusters = names
	w.mu.Unlock()
}

func res(name string, m proto.Message) *discovery.Resource {
	a, _ := anypb.New(m)
	return &discovery.Resource{Name: name, Resource: a}
}

func (w *world) cds(_ *model.Proxy, _ *xds.WatchedResource, _ *model.PushRequest) (xds.Generated, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out xds.Generated
	for _, n := range w.clusters {
		if reason, bad := w.invalid[n]; bad {
			out.Held = append(out.Held, xds.Held{Name: n, Reason: reason})
			continue
		}
		out.Resources = append(out.Resources, res(n, &cluster.Cluster{Name: n, ConnectTimeout: durationpb.New(time.Second),
			ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS}}))
	}
	return out, nil
}

func (w *world) eds(_ *model.Proxy, wr *xds.WatchedResource, _ *model.PushRequest) (xds.Generated, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out xds.Generated
	for _, n := range wr.Names() {
		if reason, bad := w.invalid[n]; bad {
			out.Held = append(out.Held, xds.Held{Name: n, Reason: reason})
			continue
		}
		out.Resources = append(out.Resources, res(n, &endpoint.ClusterLoadAssignment{ClusterName: n}))
	}
	return out, nil
}

// setInvalid makes the generators report these resources as held (failing
// validation), with a reason.
func (w *world) setInvalid(reasons map[string]string) {
	w.mu.Lock()
	w.invalid = reasons
	w.mu.Unlock()
}

type server struct {
	*xdstest.Server
	world *world
}

// newServer serves the world's clusters and their endpoints; ready installs
// a first snapshot.
func newServer(t *testing.T, ready bool) *server {
	t.Helper()
	s := xdstest.NewServer(t)
	w := &world{}
	w.set("outbound|80||a.default.svc.cluster.local", "outbound|80||b.default.svc.cluster.local")
	s.DS.RegisterGenerator(xds.ClusterType, xds.GeneratorFunc(w.cds))
	s.DS.RegisterGenerator(xds.EndpointType, xds.GeneratorFunc(w.eds))
	if ready {
		s.DS.SetPushContext(model.NewPushContext())
	}
	return &server{Server: s, world: w}
}

func dial(t *testing.T, s *server, cfg adsc.Config) *adsc.Client {
	return xdstest.Dial(t, s.Server, cfg)
}

func next(t *testing.T, c *adsc.Client) *adsc.Response { return xdstest.Next(t, c) }

func noResponse(t *testing.T, c *adsc.Client) { xdstest.NoResponse(t, c) }

func TestRefusedUntilFirstPushContext(t *testing.T) {
	s := newServer(t, false)
	c := dial(t, s, adsc.Config{})
	if err := c.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	_, err := c.Next(timeout)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("error %v, want Unavailable", err)
	}
}

func TestMalformedNodeID(t *testing.T) {
	s := newServer(t, true)
	c := dial(t, s, adsc.Config{NodeID: "sidecar~not-an-ip~x.y~y.svc.cluster.local"})
	_ = c.Watch(xds.ClusterType)
	_, err := c.Next(timeout)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "invalid IP address") {
		t.Fatalf("error %v, want InvalidArgument naming the IP", err)
	}
}

func TestSotWProtocol(t *testing.T) {
	s := newServer(t, true)
	c := dial(t, s, adsc.Config{NoAutoACK: true})
	if err := c.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	r := next(t, c)
	if len(r.Resources) != 2 || r.Version != s.DS.PushContext().PushVersion() {
		t.Fatalf("initial CDS %v %s", r.Resources, r.Version)
	}
	if err := c.ACK(r); err != nil {
		t.Fatal(err)
	}
	noResponse(t, c) // an ACK without a subscription change gets no response
	if w := s.DS.Connections()[0].Watched(xds.ClusterType); w.NonceAcked != r.Nonce {
		t.Errorf("acked nonce %q, want %q", w.NonceAcked, r.Nonce)
	}

	// a push sends the new state with the new version
	s.world.set("outbound|80||a.default.svc.cluster.local")
	pc2 := model.NewPushContext()
	s.DS.SetPushContext(pc2)
	s.DS.Push(&model.PushRequest{Full: true})
	r2 := next(t, c)
	if len(r2.Resources) != 1 || r2.Version != pc2.PushVersion() || r2.Version == r.Version || r2.Nonce == r.Nonce {
		t.Fatalf("pushed CDS %v %s", r2.Resources, r2.Version)
	}
	// NACK: recorded, not resent
	if err := c.NACK(r2, "bad cluster"); err != nil {
		t.Fatal(err)
	}
	noResponse(t, c)
	if w := s.DS.Connections()[0].Watched(xds.ClusterType); w.LastNACK != "bad cluster" {
		t.Errorf("NACK not recorded: %+v", w)
	}
	// and shown with the other configuration problems
	if ps := s.DS.Problems(); len(ps) != 1 || ps[0].Subject != "rejected cds" ||
		ps[0].Message != "1 proxies reject cds: bad cluster ("+s.DS.Connections()[0].Proxy().ID+")" {
		t.Errorf("rejected config %+v", ps)
	}
	// a stale nonce is ignored
	if err := c.SendSotW(&discovery.DiscoveryRequest{TypeUrl: xds.ClusterType, ResponseNonce: r.Nonce}); err != nil {
		t.Fatal(err)
	}
	noResponse(t, c)
	// accepting a later response clears the rejection
	s.DS.Push(&model.PushRequest{Full: true})
	if err := c.ACK(next(t, c)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for len(s.DS.Problems()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("rejection still listed after an ACK: %+v", s.DS.Problems())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSotWSubscriptionChangeAndOrder(t *testing.T) {
	s := newServer(t, true)
	c := dial(t, s, adsc.Config{})
	if err := c.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	next(t, c)
	if err := c.Watch(xds.EndpointType, "outbound|80||a.default.svc.cluster.local"); err != nil {
		t.Fatal(err)
	}
	r := next(t, c)
	if r.TypeURL != xds.EndpointType || len(r.Resources) != 1 {
		t.Fatalf("EDS %v", r.Resources)
	}
	// ACK with more names: a subscription change gets a response
	if err := c.SendSotW(&discovery.DiscoveryRequest{TypeUrl: xds.EndpointType, ResponseNonce: r.Nonce,
		ResourceNames: []string{"outbound|80||a.default.svc.cluster.local", "outbound|80||b.default.svc.cluster.local"}}); err != nil {
		t.Fatal(err)
	}
	r = next(t, c)
	if len(r.Resources) != 2 {
		t.Fatalf("EDS after resubscribe %v", r.Resources)
	}
	// a full push goes CDS then EDS
	s.DS.Push(&model.PushRequest{Full: true})
	if a, b := next(t, c), next(t, c); a.TypeURL != xds.ClusterType || b.TypeURL != xds.EndpointType {
		t.Errorf("push order %s, %s", a.TypeURL, b.TypeURL)
	}
	// an endpoint-only push sends EDS only
	s.DS.Push(&model.PushRequest{Full: false})
	if r := next(t, c); r.TypeURL != xds.EndpointType {
		t.Errorf("incremental push sent %s", r.TypeURL)
	}
	noResponse(t, c)
}

func TestDeltaProtocol(t *testing.T) {
	s := newServer(t, true)
	c := dial(t, s, adsc.Config{Delta: true})
	if err := c.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	r := next(t, c)
	if len(r.Resources) != 2 || len(r.Removed) != 0 {
		t.Fatalf("initial delta CDS %v removed %v", r.Resources, r.Removed)
	}
	// unchanged push: nothing sent
	s.DS.Push(&model.PushRequest{Full: true})
	noResponse(t, c)
	// one cluster removed, one added
	s.world.set("outbound|80||a.default.svc.cluster.local", "outbound|80||c.default.svc.cluster.local")
	s.DS.Push(&model.PushRequest{Full: true})
	r = next(t, c)
	if len(r.Resources) != 1 || r.Resources["outbound|80||c.default.svc.cluster.local"] == nil ||
		len(r.Removed) != 1 || r.Removed[0] != "outbound|80||b.default.svc.cluster.local" {
		t.Fatalf("delta push: sent %v removed %v", r.Resources, r.Removed)
	}
	if got := c.State(xds.ClusterType); len(got) != 2 {
		t.Errorf("client state %v", got)
	}
	held := c.Versions(xds.ClusterType)

	// reconnect declaring what is held: only changes and removals come
	s.world.set("outbound|80||a.default.svc.cluster.local")
	c2 := dial(t, s, adsc.Config{Delta: true})
	if err := c2.WatchWithInitialVersions(xds.ClusterType, held); err != nil {
		t.Fatal(err)
	}
	r = next(t, c2)
	if len(r.Resources) != 0 || len(r.Removed) != 1 || r.Removed[0] != "outbound|80||c.default.svc.cluster.local" {
		t.Fatalf("reconnect: sent %v removed %v", r.Resources, r.Removed)
	}
}

func TestDeltaNamedSubscriptions(t *testing.T) {
	s := newServer(t, true)
	c := dial(t, s, adsc.Config{Delta: true})
	if err := c.Watch(xds.EndpointType, "outbound|80||a.default.svc.cluster.local"); err != nil {
		t.Fatal(err)
	}
	if r := next(t, c); len(r.Resources) != 1 {
		t.Fatalf("EDS %v", r.Resources)
	}
	if err := c.SendDelta(&discovery.DeltaDiscoveryRequest{TypeUrl: xds.EndpointType,
		ResourceNamesSubscribe: []string{"outbound|80||b.default.svc.cluster.local"}}); err != nil {
		t.Fatal(err)
	}
	r := next(t, c)
	if len(r.Resources) != 1 || r.Resources["outbound|80||b.default.svc.cluster.local"] == nil {
		t.Fatalf("subscribe: %v", r.Resources)
	}
	if err := c.SendDelta(&discovery.DeltaDiscoveryRequest{TypeUrl: xds.EndpointType,
		ResourceNamesUnsubscribe: []string{"outbound|80||a.default.svc.cluster.local"}}); err != nil {
		t.Fatal(err)
	}
	noResponse(t, c)
	if w := s.DS.Connections()[0].Watched(xds.EndpointType); len(w.ResourceNames) != 1 {
		t.Errorf("watch after unsubscribe: %v", w.ResourceNames)
	}
}
