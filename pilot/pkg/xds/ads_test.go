package xds_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
)

const timeout = 10 * time.Second

// world is what the test generators serve.
type world struct {
	mu       sync.Mutex
	clusters []string
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

func (w *world) cds(_ *model.Proxy, _ *xds.WatchedResource, _ *model.PushRequest) ([]*discovery.Resource, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*discovery.Resource
	for _, n := range w.clusters {
		out = append(out, res(n, &cluster.Cluster{Name: n, ConnectTimeout: durationpb.New(time.Second),
			ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS}}))
	}
	return out, nil
}

func (w *world) eds(_ *model.Proxy, wr *xds.WatchedResource, _ *model.PushRequest) ([]*discovery.Resource, error) {
	var out []*discovery.Resource
	for _, n := range wr.Names() {
		out = append(out, res(n, &endpoint.ClusterLoadAssignment{ClusterName: n}))
	}
	return out, nil
}

type server struct {
	ds    *xds.DiscoveryServer
	addr  string
	world *world
}

func newServer(t *testing.T, ready bool) *server {
	t.Helper()
	ds := xds.NewDiscoveryServer()
	w := &world{}
	w.set("outbound|80||a.default.svc.cluster.local", "outbound|80||b.default.svc.cluster.local")
	ds.RegisterGenerator(xds.ClusterType, xds.GeneratorFunc(w.cds))
	ds.RegisterGenerator(xds.EndpointType, xds.GeneratorFunc(w.eds))
	if ready {
		ds.SetPushContext(model.NewPushContext(), "v1")
	}
	g := grpc.NewServer()
	ds.Register(g)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(l) }()
	t.Cleanup(g.Stop)
	return &server{ds: ds, addr: l.Addr().String(), world: w}
}

const nodeID = "sidecar~10.0.0.1~app-1.default~default.svc.cluster.local"

func dial(t *testing.T, s *server, cfg adsc.Config) *adsc.Client {
	t.Helper()
	if cfg.NodeID == "" {
		cfg.NodeID = nodeID
	}
	c, err := adsc.Dial(context.Background(), s.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func next(t *testing.T, c *adsc.Client) *adsc.Response {
	t.Helper()
	r, err := c.Next(timeout)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// noResponse asserts nothing arrives for a while; it cannot prove absence,
// but a resend would arrive well within it.
func noResponse(t *testing.T, c *adsc.Client) {
	t.Helper()
	if r, err := c.Next(300 * time.Millisecond); err == nil {
		t.Fatalf("unexpected response %s %v", r.TypeURL, r.Resources)
	}
}

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
	if len(r.Resources) != 2 || r.Version != "v1" {
		t.Fatalf("initial CDS %v %s", r.Resources, r.Version)
	}
	if err := c.ACK(r); err != nil {
		t.Fatal(err)
	}
	noResponse(t, c) // an ACK without a subscription change gets no response
	if w := s.ds.Connections()[0].Watched(xds.ClusterType); w.NonceAcked != r.Nonce {
		t.Errorf("acked nonce %q, want %q", w.NonceAcked, r.Nonce)
	}

	// a push sends the new state with the new version
	s.world.set("outbound|80||a.default.svc.cluster.local")
	s.ds.SetPushContext(model.NewPushContext(), "v2")
	s.ds.Push(&model.PushRequest{Full: true})
	r2 := next(t, c)
	if len(r2.Resources) != 1 || r2.Version != "v2" || r2.Nonce == r.Nonce {
		t.Fatalf("pushed CDS %v %s", r2.Resources, r2.Version)
	}
	// NACK: recorded, not resent
	if err := c.NACK(r2, "bad cluster"); err != nil {
		t.Fatal(err)
	}
	noResponse(t, c)
	if w := s.ds.Connections()[0].Watched(xds.ClusterType); w.LastNACK != "bad cluster" {
		t.Errorf("NACK not recorded: %+v", w)
	}
	// and shown with the other configuration problems
	if ps := s.ds.RejectedConfig(); len(ps) != 1 || ps[0].Subject != "rejected cds" ||
		ps[0].Message != "1 proxies reject cds: bad cluster ("+s.ds.Connections()[0].Proxy().ID+")" {
		t.Errorf("rejected config %+v", ps)
	}
	// a stale nonce is ignored
	if err := c.SendSotW(&discovery.DiscoveryRequest{TypeUrl: xds.ClusterType, ResponseNonce: r.Nonce}); err != nil {
		t.Fatal(err)
	}
	noResponse(t, c)
	// accepting a later response clears the rejection
	s.ds.Push(&model.PushRequest{Full: true})
	if err := c.ACK(next(t, c)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for len(s.ds.RejectedConfig()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("rejection still listed after an ACK: %+v", s.ds.RejectedConfig())
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
	s.ds.Push(&model.PushRequest{Full: true})
	if a, b := next(t, c), next(t, c); a.TypeURL != xds.ClusterType || b.TypeURL != xds.EndpointType {
		t.Errorf("push order %s, %s", a.TypeURL, b.TypeURL)
	}
	// an endpoint-only push sends EDS only
	s.ds.Push(&model.PushRequest{Full: false})
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
	s.ds.Push(&model.PushRequest{Full: true})
	noResponse(t, c)
	// one cluster removed, one added
	s.world.set("outbound|80||a.default.svc.cluster.local", "outbound|80||c.default.svc.cluster.local")
	s.ds.Push(&model.PushRequest{Full: true})
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
	if w := s.ds.Connections()[0].Watched(xds.EndpointType); len(w.ResourceNames) != 1 {
		t.Errorf("watch after unsubscribe: %v", w.ResourceNames)
	}
}

func TestAdszAndSyncz(t *testing.T) {
	s := newServer(t, true)
	c := dial(t, s, adsc.Config{NoAutoACK: true, Metadata: map[string]any{"ISTIO_VERSION": "1.31.0", "NAMESPACE": "default"}})
	if err := c.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	r := next(t, c)
	get := func(h http.HandlerFunc) string {
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest("GET", "/", nil))
		return rec.Body.String()
	}
	if body := get(s.ds.SynczHandler); !strings.Contains(body, `"status": "STALE"`) {
		t.Errorf("syncz before ACK: %s", body)
	}
	if err := c.ACK(r); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for !strings.Contains(get(s.ds.SynczHandler), `"status": "SYNCED"`) {
		if time.Now().After(deadline) {
			t.Fatalf("syncz after ACK: %s", get(s.ds.SynczHandler))
		}
		time.Sleep(5 * time.Millisecond)
	}
	adsz := get(s.ds.AdszHandler)
	for _, want := range []string{`"proxyType": "sidecar"`, `"cds": [`, `"*"`, `"ISTIO_VERSION": "1.31.0"`, `"namespace": "default"`} {
		if !strings.Contains(adsz, want) {
			t.Errorf("adsz lacks %s: %s", want, adsz)
		}
	}
}
