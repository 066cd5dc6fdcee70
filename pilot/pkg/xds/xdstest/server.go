package xdstest

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
)

// Timeout bounds every wait for a response.
const Timeout = 10 * time.Second

// NodeID is the sidecar node ID Dial uses when the config names none.
const NodeID = "sidecar~10.0.0.1~app-1.default~default.svc.cluster.local"

// Server is an ADS server listening on 127.0.0.1, stopped when the test
// ends. It has no generators and no snapshot until the test gives it some.
type Server struct {
	DS   *xds.DiscoveryServer
	Addr string
}

// NewServer starts a DiscoveryServer on a free loopback port.
func NewServer(t testing.TB) *Server {
	t.Helper()
	ds := xds.NewDiscoveryServer()
	g := grpc.NewServer(ds.GRPCServerOptions()...)
	ds.Register(g)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(l) }()
	t.Cleanup(g.Stop)
	return &Server{DS: ds, Addr: l.Addr().String()}
}

// Dial connects an ADS client (NodeID when cfg has none), closed when the
// test ends.
func Dial(t testing.TB, s *Server, cfg adsc.Config) *adsc.Client {
	t.Helper()
	if cfg.NodeID == "" {
		cfg.NodeID = NodeID
	}
	c, err := adsc.Dial(context.Background(), s.Addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Next waits for the next response and fails the test without one.
func Next(t testing.TB, c *adsc.Client) *adsc.Response {
	t.Helper()
	r, err := c.Next(Timeout)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// NoResponse asserts nothing arrives for a while; it cannot prove absence,
// but a resend would arrive well within it.
func NoResponse(t testing.TB, c *adsc.Client) {
	t.Helper()
	if r, err := c.Next(300 * time.Millisecond); err == nil {
		t.Fatalf("unexpected response %s %v", r.TypeURL, r.Resources)
	}
}

// Watch is one subscription: a type and the names asked for (none: all).
type Watch struct {
	Type  string
	Names []string
}

// WatchInTurn subscribes c to each watch in turn, each after the response
// to the one before, as Envoy does, and returns those responses in order.
func WatchInTurn(t testing.TB, c *adsc.Client, ws ...Watch) []*adsc.Response {
	t.Helper()
	out := make([]*adsc.Response, 0, len(ws))
	for _, w := range ws {
		if err := c.Watch(w.Type, w.Names...); err != nil {
			t.Fatal(err)
		}
		out = append(out, Next(t, c))
	}
	return out
}
