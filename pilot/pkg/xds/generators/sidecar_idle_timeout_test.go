package generators_test

import (
	"path/filepath"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

// Outbound listeners are cached per sidecar scope, but their TCP proxies
// and HTTP connection managers take the proxy's own IDLE_TIMEOUT: sidecars
// of one scope that differ only in it get their own listeners, whichever
// connects first; an invalid value is no timeout, as in Istio.
func TestIdleTimeoutPerProxy(t *testing.T) {
	s := serveFile(t, filepath.Join("testdata", "sidecar-idle-timeout.yaml"), nil, nil)
	// idle is the db chain's idle timeout and the outbound HCM's (-1: none)
	idle := func(t *testing.T, ip, value string) (tcp, http time.Duration) {
		t.Helper()
		md := map[string]any{"NAMESPACE": "app"}
		if value != "" {
			md["IDLE_TIMEOUT"] = value
		}
		c := xdstest.Dial(t, s, adsc.Config{NodeID: "sidecar~" + ip + "~p.app~app.svc.cluster.local", Metadata: md})
		if err := c.Watch(xds.ListenerType); err != nil {
			t.Fatal(err)
		}
		r := xdstest.Next(t, c)
		of := func(d interface{ AsDuration() time.Duration }, set bool) time.Duration {
			if !set {
				return -1
			}
			return d.AsDuration()
		}
		db, ok := r.Resources["10.99.2.1_5432"].(*listenerv3.Listener)
		if !ok {
			t.Fatalf("no listener 10.99.2.1_5432 in %d resources", len(r.Resources))
		}
		tp := &tcpproxy.TcpProxy{}
		if err := db.FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(tp); err != nil {
			t.Fatal(err)
		}
		web, ok := r.Resources["0.0.0.0_80"].(*listenerv3.Listener)
		if !ok {
			t.Fatalf("no listener 0.0.0.0_80")
		}
		m := &hcm.HttpConnectionManager{}
		if err := web.FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(m); err != nil {
			t.Fatal(err)
		}
		return of(tp.GetIdleTimeout(), tp.GetIdleTimeout() != nil),
			of(m.GetCommonHttpProtocolOptions().GetIdleTimeout(), m.GetCommonHttpProtocolOptions().GetIdleTimeout() != nil)
	}
	for _, tc := range []struct {
		ip, value string
		want      time.Duration
	}{
		{"10.1.0.50", "45s", 45 * time.Second},
		{"10.1.0.51", "", -1},
		{"10.1.0.52", "2m", 2 * time.Minute},
		{"10.1.0.53", "bogus", -1},
		{"10.1.0.54", "45s", 45 * time.Second},
	} {
		tcp, http := idle(t, tc.ip, tc.value)
		if tcp != tc.want || http != tc.want {
			t.Errorf("IDLE_TIMEOUT %q: tcp_proxy %v, HCM %v, want %v", tc.value, tcp, http, tc.want)
		}
	}
}
