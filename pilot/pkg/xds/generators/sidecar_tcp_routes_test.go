package generators_test

import (
	"path/filepath"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

// Outbound listeners are cached per sidecar scope within a snapshot, but a
// tcp route's sourceLabels make them depend on the proxy's labels too: two
// sidecars of one namespace whose labels pick different routes get
// different chains, whichever connects first.
func TestTCPRoutesFollowProxyLabels(t *testing.T) {
	s := serveFile(t, filepath.Join("testdata", "sidecar-tcp-routes.yaml"), nil, nil)
	target := func(t *testing.T, labels map[string]any, ip string) string {
		t.Helper()
		c := xdstest.Dial(t, s, adsc.Config{NodeID: "sidecar~" + ip + "~p.app~app.svc.cluster.local",
			Metadata: map[string]any{"NAMESPACE": "app", "LABELS": labels}})
		if err := c.Watch(xds.ListenerType); err != nil {
			t.Fatal(err)
		}
		r := xdstest.Next(t, c)
		l, ok := r.Resources["10.97.0.5_5432"].(*listenerv3.Listener)
		if !ok {
			t.Fatalf("no listener 10.97.0.5_5432 in %d resources", len(r.Resources))
		}
		fc := l.GetDefaultFilterChain()
		if fc == nil {
			t.Fatalf("no default chain: %v", l)
		}
		tp := &tcpproxy.TcpProxy{}
		if err := fc.Filters[len(fc.Filters)-1].GetTypedConfig().UnmarshalTo(tp); err != nil {
			t.Fatal(err)
		}
		if tp.GetWeightedClusters() != nil {
			return "weighted:" + tp.GetStatPrefix()
		}
		return tp.GetCluster()
	}
	if got, want := target(t, map[string]any{"app": "client"}, "10.1.0.30"), "weighted:db.app"; got != want {
		t.Errorf("app=client: %s, want %s", got, want)
	}
	if got, want := target(t, map[string]any{"app": "other"}, "10.1.0.31"), "outbound|5432|v2|db.app.svc.cluster.local"; got != want {
		t.Errorf("app=other: %s, want %s", got, want)
	}
	// a label no route selects on changes nothing
	if got, want := target(t, map[string]any{"app": "client", "pod": "x"}, "10.1.0.32"), "weighted:db.app"; got != want {
		t.Errorf("app=client,pod=x: %s, want %s", got, want)
	}
}
