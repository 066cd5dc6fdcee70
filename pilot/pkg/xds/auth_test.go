package xds_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

// Streams over TLS are authenticated and bound to their identity, with
// Istio's codes and messages (../shared/reference/security/real/
// grpc-status.txt); the plaintext port authenticates nothing.
func TestTLSStreamsAuthenticateAndAuthorize(t *testing.T) {
	s := xdstest.NewTLSServer(t)
	w := &world{}
	w.set(clusterA)
	s.DS.RegisterGenerator(xds.ClusterType, xds.GeneratorFunc(w.cds))
	s.DS.SetPushContext(model.NewPushContext())
	s.DS.SetAuthenticator(xdstest.TokenIdentity)
	const node = "sidecar~10.244.0.10~productpage-v1-abc.bookinfo~bookinfo.svc.cluster.local"
	productpage := map[string]any{"NAMESPACE": "bookinfo", "SERVICE_ACCOUNT": "bookinfo-productpage"}
	for _, c := range []struct {
		name     string
		token    string
		md       map[string]any
		code     codes.Code
		message  string
		plainTCP bool
	}{
		{name: "no token", code: codes.Unauthenticated, message: "authentication failure"},
		{name: "token of another namespace", token: "elsewhere/intruder", md: productpage, code: codes.PermissionDenied,
			message: "authorization failed: no identities ([spiffe://cluster.local/ns/elsewhere/sa/intruder]) matched bookinfo/bookinfo-productpage"},
		{name: "another service account", token: "bookinfo/bookinfo-productpage", md: map[string]any{"NAMESPACE": "bookinfo", "SERVICE_ACCOUNT": "reviews"},
			code: codes.PermissionDenied, message: "authorization failed: no identities ([spiffe://cluster.local/ns/bookinfo/sa/bookinfo-productpage]) matched bookinfo/reviews"},
		{name: "no service account in the node", token: "bookinfo/bookinfo-productpage", md: map[string]any{"NAMESPACE": "bookinfo"}},
		{name: "matching node", token: "bookinfo/bookinfo-productpage", md: productpage},
		{name: "plaintext port, no token", md: productpage, plainTCP: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := adsc.Config{NodeID: node, Metadata: c.md}
			if !c.plainTCP {
				cfg.DialOptions = s.DialOptions(c.token)
			}
			addr := s.TLSAddr
			if c.plainTCP {
				addr = s.Addr
			}
			cl, err := adsc.Dial(context.Background(), addr, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if err := cl.Watch(xds.ClusterType); err != nil && c.code == codes.OK {
				t.Fatal(err)
			}
			r, err := cl.Next(timeout)
			if c.code == codes.OK {
				if err != nil || len(r.Resources) != 1 {
					t.Fatalf("got %v, %v", r, err)
				}
				return
			}
			if st, _ := status.FromError(err); st.Code() != c.code || st.Message() != c.message {
				t.Fatalf("got %v, want %v %q", err, c.code, c.message)
			}
		})
	}
}

// New streams over the rate limit wait up to a second, then are refused
// with ResourceExhausted, as Istio's istiod does; the first one passes.
func TestNewStreamRateLimit(t *testing.T) {
	s := newServer(t, true)
	s.DS.SetRequestLimit(0.1) // one stream per ten seconds
	first := dial(t, s, adsc.Config{})
	if err := first.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	next(t, first)
	second := dial(t, s, adsc.Config{NodeID: "sidecar~10.0.0.2~app-2.default~default.svc.cluster.local"})
	_ = second.Watch(xds.ClusterType)
	if _, err := second.Next(timeout); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "request rate limit exceeded") {
		t.Errorf("second stream: %v, want ResourceExhausted", err)
	}
}
