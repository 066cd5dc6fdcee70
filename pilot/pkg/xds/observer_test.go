package xds_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
)

// recorder is a ConnectionObserver that records its calls and refuses
// proxies whose metadata sets REFUSE.
type recorder struct {
	mu     sync.Mutex
	events []string
}

var _ xds.ConnectionObserver = (*recorder)(nil)

func (r *recorder) add(e string) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func (r *recorder) OnConnect(s model.ProxyStream) error {
	if s.Proxy.Metadata.Raw["REFUSE"] != nil {
		r.add("refuse " + s.Proxy.ID)
		return status.Error(codes.FailedPrecondition, "refused by the observer")
	}
	if s.ID == "" || s.ConnectedAt.IsZero() {
		return errors.New("stream without ID or time")
	}
	r.add("connect " + s.Proxy.ID + " " + s.NodeLocality)
	return nil
}

func (r *recorder) OnDisconnect(s model.ProxyStream) { r.add("disconnect " + s.Proxy.ID) }

func (r *recorder) OnHealth(s model.ProxyStream, healthy bool, msg string) {
	r.add(fmt.Sprintf("health %s %v %s", s.Proxy.ID, healthy, msg))
}

func (r *recorder) wait(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := r.list()
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("observer calls %q, want %q", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The observer sees connect, health reports (taken, never answered: SotW
// and delta, an ErrorDetail is unhealthy) and disconnect; a refusal ends
// the stream with the observer's status and no disconnect call.
func TestConnectionObserver(t *testing.T) {
	for _, delta := range []bool{false, true} {
		t.Run(fmt.Sprintf("delta=%v", delta), func(t *testing.T) {
			s := newServer(t, true)
			rec := &recorder{}
			s.DS.SetConnectionObserver(rec)
			node := "sidecar~10.0.0.1~vm.ns~ns.svc.cluster.local"
			c := dial(t, s, adsc.Config{NodeID: node, Delta: delta})
			if err := c.Watch(xds.ClusterType); err != nil {
				t.Fatal(err)
			}
			next(t, c)
			send := func(detail *statuspb.Status) {
				var err error
				if delta {
					err = c.SendDelta(&discovery.DeltaDiscoveryRequest{TypeUrl: xds.HealthInfoType, ErrorDetail: detail})
				} else {
					err = c.SendSotW(&discovery.DiscoveryRequest{TypeUrl: xds.HealthInfoType, ErrorDetail: detail})
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			send(nil)
			send(&statuspb.Status{Code: int32(codes.Internal), Message: "probe failed"})
			rec.wait(t, "connect vm.ns ", "health vm.ns true ", "health vm.ns false probe failed")
			noResponse(t, c)
			if w := s.DS.Connections()[0].Watched(xds.HealthInfoType); w != nil {
				t.Fatalf("health reports became a watch: %+v", w)
			}
			c.Close()
			rec.wait(t, "connect vm.ns ", "health vm.ns true ", "health vm.ns false probe failed", "disconnect vm.ns")

			refused := dial(t, s, adsc.Config{NodeID: "sidecar~10.0.0.2~vm2.ns~ns.svc.cluster.local", Delta: delta,
				Metadata: map[string]any{"REFUSE": "1"}})
			_ = refused.Watch(xds.ClusterType)
			if _, err := refused.Next(timeout); status.Code(err) != codes.FailedPrecondition || status.Convert(err).Message() != "refused by the observer" {
				t.Fatalf("refused stream: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
			rec.wait(t, "connect vm.ns ", "health vm.ns true ", "health vm.ns false probe failed", "disconnect vm.ns", "refuse vm2.ns")
			if n := len(s.DS.Connections()); n != 0 {
				t.Fatalf("%d connections after the refusal", n)
			}
		})
	}
}
