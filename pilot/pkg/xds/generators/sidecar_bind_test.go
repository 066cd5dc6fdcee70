package generators_test

import (
	"path/filepath"
	"strings"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

// checkCaseValid connects to a golden case and runs Envoy's own validation
// on every resource of the types it gets (clusters and listeners when none
// are named; there must be some of each of those two).
func checkCaseValid(t *testing.T, name string, types ...string) {
	t.Helper()
	c := connectCase(t, name)
	if len(types) == 0 {
		types = []string{xds.ClusterType, xds.ListenerType}
	}
	for _, typ := range types {
		if len(c.State(typ)) == 0 && typ != xds.RouteType {
			t.Fatalf("no %s", typ)
		}
		for _, n := range c.State(typ) {
			m, ok := c.Resource(typ, n).(interface{ ValidateAll() error })
			if !ok {
				t.Fatalf("%s %s: not a validating message", typ, n)
			}
			if err := m.ValidateAll(); err != nil {
				t.Errorf("%s %s: %v", typ, n, err)
			}
		}
	}
}

// connectCase serves a golden case and returns a client holding every
// cluster, listener and the case's routes.
func connectCase(t *testing.T, name string) *adsc.Client {
	t.Helper()
	c, _ := connectCaseServer(t, name)
	return c
}

// connectCaseServer is connectCase, also returning the server.
func connectCaseServer(t *testing.T, name string) (*adsc.Client, *xdstest.Server) {
	t.Helper()
	gc := findCase(t, name)
	env, idx, disc := envFromFileWith(t, filepath.Join("testdata", gc.name+".yaml"), gc.mesh, gc.hashAllocate)
	c, s := dialCaseServer(t, gc, env, idx, disc)
	watches := []xdstest.Watch{{Type: xds.ClusterType}, {Type: xds.ListenerType}}
	if len(gc.routes) > 0 {
		watches = append(watches, xdstest.Watch{Type: xds.RouteType, Names: gc.routes})
	}
	xdstest.WatchInTurn(t, c, watches...)
	return c, s
}

func lds(t *testing.T, c *adsc.Client, name string) *listenerv3.Listener {
	t.Helper()
	l, _ := c.Resource(xds.ListenerType, name).(*listenerv3.Listener)
	return l
}

// TestSidecarBindResourcesValid: every cluster, listener and route of the
// Sidecar bind cases passes Envoy's own validation.
func TestSidecarBindResourcesValid(t *testing.T) {
	for _, name := range []string{"sidecar-bind", "sidecar-none-mode", "sidecar-conflicts", "sidecar-ingress-tls", "sidecar-ingress-tls-off", "sidecar-ingress", "sidecar-static-port"} {
		t.Run(name, func(t *testing.T) {
			checkCaseValid(t, name, xds.ClusterType, xds.ListenerType, xds.RouteType)
		})
	}
}

func TestSidecarBoundListeners(t *testing.T) {
	c := connectCase(t, "sidecar-bind")
	in := lds(t, c, "10.1.0.9_9080")
	if in == nil || in.TrafficDirection != core.TrafficDirection_INBOUND || in.BindToPort != nil {
		t.Fatalf("captureMode NONE ingress: want an inbound listener that binds, got %v", in)
	}
	for _, f := range in.ListenerFilters {
		if f.Name == "envoy.filters.listener.original_dst" {
			t.Error("a bound inbound listener has no original destination to restore")
		}
	}
	vi := lds(t, c, "virtualInbound")
	var chains []string
	for _, fc := range vi.FilterChains {
		chains = append(chains, fc.Name)
		if fc.Name == "127.0.0.1_9443" && fc.GetMetadata().GetFilterMetadata()["istio"].GetFields()["config"].GetStringValue() !=
			"/apis/networking.istio.io/v1/namespaces/app/sidecar/bind" {
			t.Errorf("Sidecar ingress chain without the Sidecar in its metadata: %v", fc.Metadata)
		}
	}
	joined := strings.Join(chains, ",")
	if !strings.Contains(joined, "127.0.0.1_9443") || strings.Contains(joined, "_9080") || strings.Contains(joined, "_80,") ||
		strings.Contains(joined, "_15021") {
		t.Errorf("virtualInbound chains %v: want 127.0.0.1_9443 only among the Sidecar's ports", chains)
	}
	if c.Resource(xds.ClusterType, "inbound|80||") == nil || c.Resource(xds.ClusterType, "inbound|15021||") == nil {
		t.Error("ports without a listener keep their inbound clusters")
	}
	uds := lds(t, c, "unix:///var/run/app.sock_0")
	if uds.GetAddress().GetPipe().GetPath() != "/var/run/app.sock" || uds.BindToPort != nil {
		t.Errorf("unix socket listener: %v", uds.GetAddress())
	}
	rc, _ := c.Resource(xds.RouteType, "unix:///var/run/app.sock").(*routev3.RouteConfiguration)
	if rc == nil || len(rc.VirtualHosts) != 2 || rc.VirtualHosts[0].Name != "web.app.svc.cluster.local:8080" {
		t.Errorf("unix socket routes: %v", rc)
	}
	egress := lds(t, c, "127.0.0.1_9080")
	if egress.BindToPort != nil || len(egress.FilterChains) != 1 || egress.FilterChains[0].FilterChainMatch != nil || egress.DefaultFilterChain != nil {
		t.Errorf("egress 9080 on 127.0.0.1: want one catch-all chain on a listener that binds, got %v", egress)
	}
	for _, n := range []string{"10.96.30.2_5432", "10.96.30.3_5432", "0.0.0.0_8080", "0.0.0.0_80", "virtualOutbound"} {
		if lds(t, c, n) == nil {
			t.Errorf("missing listener %s", n)
		}
	}
}

func TestSidecarNoneMode(t *testing.T) {
	c := connectCase(t, "sidecar-none-mode")
	for _, n := range c.State(xds.ListenerType) {
		l := lds(t, c, n)
		if l.BindToPort != nil && !l.BindToPort.Value {
			t.Errorf("%s: a proxy without redirection only has listeners that bind", n)
		}
	}
	if lds(t, c, "virtualInbound") != nil || lds(t, c, "virtualOutbound") != nil {
		t.Error("no virtual listeners without redirection")
	}
	if lds(t, c, "10.1.0.9_9080") == nil || lds(t, c, "127.0.0.1_8080") == nil || lds(t, c, "127.0.0.1_5432") == nil {
		t.Errorf("listeners %v", c.State(xds.ListenerType))
	}
}

func TestSidecarListenerClashKeepsTheRest(t *testing.T) {
	c, s := connectCaseServer(t, "sidecar-conflicts")
	l := lds(t, c, "127.0.0.1_9080")
	if l == nil || l.TrafficDirection != core.TrafficDirection_OUTBOUND {
		t.Fatalf("127.0.0.1_9080: want the outbound listener, got %v", l)
	}
	for _, n := range []string{"0.0.0.0_8080", "virtualInbound", "virtualOutbound"} {
		if lds(t, c, n) == nil {
			t.Errorf("unrelated listener %s missing", n)
		}
	}
	for _, n := range c.State(xds.ListenerType) {
		if strings.HasSuffix(n, "_15001") || strings.HasSuffix(n, "_443") || strings.HasSuffix(n, "_15090") {
			t.Errorf("%s: the port cannot be bound", n)
		}
	}
	vi := lds(t, c, "virtualInbound")
	for _, fc := range vi.FilterChains {
		if strings.HasSuffix(fc.Name, "_15090") {
			t.Error("a chain on the Prometheus port")
		}
	}
	// what was left out is on /debug/push_status, not only in the log
	status := s.DS.PushContext().ProxyStatus()
	var clash, skipped []string
	for _, st := range status[model.MetricConflictInboundListener] {
		clash = append(clash, st.Message)
	}
	for _, st := range status[model.MetricSidecarPortSkipped] {
		skipped = append(skipped, st.Message)
	}
	if len(clash) != 1 || !strings.Contains(clash[0], "inbound listener 127.0.0.1_9080 left out") {
		t.Errorf("push status inbound conflicts %v", clash)
	}
	if !strings.Contains(strings.Join(skipped, "\n"), "no outbound listener on port 15001") {
		t.Errorf("push status skipped ports %v", skipped)
	}
}

func TestSidecarIngressTLSFlag(t *testing.T) {
	chain := func(name string) *listenerv3.FilterChain {
		c := connectCase(t, name)
		for _, fc := range lds(t, c, "virtualInbound").FilterChains {
			if fc.Name == "10.1.0.9_8443" {
				return fc
			}
		}
		t.Fatalf("%s: no chain for 8443", name)
		return nil
	}
	on, off := chain("sidecar-ingress-tls"), chain("sidecar-ingress-tls-off")
	if on.GetFilterChainMatch().GetTransportProtocol() != "tls" || on.TransportSocket == nil {
		t.Errorf("flag on: want the Sidecar's TLS on 8443, got %v", on)
	}
	if off.GetFilterChainMatch().GetTransportProtocol() != "raw_buffer" || off.TransportSocket != nil {
		t.Errorf("flag off: want plain text (tls ignored), got %v", off)
	}
	if proto.Equal(on, off) {
		t.Error("the flag changes nothing")
	}
}

func TestServicePortOnStaticListenerPort(t *testing.T) {
	c := connectCase(t, "sidecar-static-port")
	var chains []string
	for _, fc := range lds(t, c, "virtualInbound").FilterChains {
		chains = append(chains, fc.Name)
	}
	joined := strings.Join(chains, ",")
	if strings.Contains(joined, "_15021") || !strings.Contains(joined, "0.0.0.0_8080") {
		t.Errorf("virtualInbound chains %v: want 8080's, not the status port's", chains)
	}
	if c.Resource(xds.ClusterType, "inbound|15021||") == nil {
		t.Error("the status port's inbound cluster stays")
	}
}
