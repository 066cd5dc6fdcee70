package generators_test

import (
	"path/filepath"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

// TestInterceptionAndIPModeResourcesValid: every resource of the
// interception, IP mode and protocol detection cases passes Envoy's own
// validation.
func TestInterceptionAndIPModeResourcesValid(t *testing.T) {
	for _, name := range []string{"sidecar-tproxy", "sidecar-dual-stack", "sidecar-ipv6", "sidecar-detection-timeout"} {
		t.Run(name, func(t *testing.T) {
			checkCaseValid(t, name)
		})
	}
}

// modeProxy is a proxy of the app namespace (one sidecar scope) that
// differs from the others only in interception mode or addresses.
type modeProxy struct {
	name, nodeID string
	meta         map[string]any
	// what it must get, whatever proxy of the scope connected before it
	transparent bool
	address     string
	extra       []string
	dnsFamily   clusterv3.Cluster_DnsLookupFamily
}

var modeProxies = []modeProxy{
	{name: "redirect", nodeID: "sidecar~10.1.0.30~a.app~app.svc.cluster.local", address: "0.0.0.0", dnsFamily: clusterv3.Cluster_V4_ONLY},
	{name: "tproxy", nodeID: "sidecar~10.1.0.31~b.app~app.svc.cluster.local", meta: map[string]any{"INTERCEPTION_MODE": "TPROXY"},
		transparent: true, address: "0.0.0.0", dnsFamily: clusterv3.Cluster_V4_ONLY},
	{name: "dual", nodeID: "sidecar~10.1.0.32~c.app~app.svc.cluster.local", meta: map[string]any{"INSTANCE_IPS": "10.1.0.32,fd00::32"},
		address: "0.0.0.0", extra: []string{"::"}, dnsFamily: clusterv3.Cluster_ALL},
	{name: "ipv6", nodeID: "sidecar~fd00::33~d.app~app.svc.cluster.local", address: "::", dnsFamily: clusterv3.Cluster_V6_ONLY},
}

// TestModesNeverShareCachedResources: proxies of one sidecar scope that
// differ only in interception mode or IP mode each get their own
// virtualOutbound and DNS clusters, in every order they connect in (the
// outbound listeners and clusters are cached per scope).
func TestModesNeverShareCachedResources(t *testing.T) {
	orders := [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 0, 3, 2}}
	for _, order := range orders {
		s := serveFile(t, filepath.Join("testdata", "sidecar-dual-stack.yaml"), nil, func(g *generators.SidecarGenerators) { g.DualStack = true })
		for _, i := range order {
			p := modeProxies[i]
			md := map[string]any{"NAMESPACE": "app"}
			for k, v := range p.meta {
				md[k] = v
			}
			c := xdstest.Dial(t, s, adsc.Config{NodeID: p.nodeID, Metadata: md})
			xdstest.WatchInTurn(t, c, xdstest.Watch{Type: xds.ClusterType}, xdstest.Watch{Type: xds.ListenerType})
			vo, _ := c.Resource(xds.ListenerType, "virtualOutbound").(*listenerv3.Listener)
			if vo == nil {
				t.Fatalf("%v %s: no virtualOutbound", order, p.name)
			}
			if got := vo.GetTransparent().GetValue(); got != p.transparent {
				t.Errorf("%v %s: virtualOutbound transparent %v, want %v", order, p.name, got, p.transparent)
			}
			if got := vo.GetAddress().GetSocketAddress().GetAddress(); got != p.address {
				t.Errorf("%v %s: virtualOutbound on %s, want %s", order, p.name, got, p.address)
			}
			var extra []string
			for _, a := range vo.AdditionalAddresses {
				extra = append(extra, a.GetAddress().GetSocketAddress().GetAddress())
			}
			if len(extra) != len(p.extra) || (len(extra) > 0 && extra[0] != p.extra[0]) {
				t.Errorf("%v %s: virtualOutbound additional addresses %v, want %v", order, p.name, extra, p.extra)
			}
			dns, _ := c.Resource(xds.ClusterType, "outbound|6379||cache.example.com").(*clusterv3.Cluster)
			if dns.GetDnsLookupFamily() != p.dnsFamily {
				t.Errorf("%v %s: DNS cluster resolves %v, want %v", order, p.name, dns.GetDnsLookupFamily(), p.dnsFamily)
			}
		}
	}
}

// TestConnectionSettingsPerProxy: sidecars of one scope whose PROXY_CONFIG
// asks for different connectionSettings get their own outbound HTTP
// connection managers; one without PROXY_CONFIG settings gets the mesh's.
func TestConnectionSettingsPerProxy(t *testing.T) {
	env, idx, disc := envFromFile(t, filepath.Join("testdata", "sidecar-connection-settings.yaml"), func(m *meshconfig.MeshConfig) {
		m.DefaultConfig.ConnectionSettings = &meshconfig.ProxyConfig_ConnectionSettings{HttpStreamIdleTimeout: durationpb.New(time.Minute)}
	})
	s := xdstest.NewServer(t)
	(&generators.SidecarGenerators{Endpoints: idx, Discovery: disc}).Register(s.DS)
	s.DS.InitPushContext(env)
	for _, p := range []struct {
		nodeID string
		pc     map[string]any
		want   time.Duration
	}{
		{"sidecar~10.1.0.50~a.app~app.svc.cluster.local", nil, time.Minute},
		{"sidecar~10.1.0.51~b.app~app.svc.cluster.local", map[string]any{"connectionSettings": map[string]any{"httpStreamIdleTimeout": "7s"}}, 7 * time.Second},
		// settings the proxy's config leaves out come from nowhere else
		{"sidecar~10.1.0.52~c.app~app.svc.cluster.local", map[string]any{"connectionSettings": map[string]any{"httpRequestTimeout": "3s"}}, 0},
		{"sidecar~10.1.0.53~d.app~app.svc.cluster.local", nil, time.Minute},
	} {
		md := map[string]any{"NAMESPACE": "app"}
		if p.pc != nil {
			md["PROXY_CONFIG"] = p.pc
		}
		c := xdstest.Dial(t, s, adsc.Config{NodeID: p.nodeID, Metadata: md})
		if err := c.Watch(xds.ListenerType); err != nil {
			t.Fatal(err)
		}
		xdstest.Next(t, c)
		l, _ := c.Resource(xds.ListenerType, "0.0.0.0_80").(*listenerv3.Listener)
		var m *hcm.HttpConnectionManager
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.Filters {
				if f.Name == "envoy.filters.network.http_connection_manager" {
					m = &hcm.HttpConnectionManager{}
					if err := f.GetTypedConfig().UnmarshalTo(m); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if m == nil {
			t.Fatalf("%s: no HTTP chain on 0.0.0.0_80: %v", p.nodeID, l)
		}
		if got := m.GetStreamIdleTimeout().AsDuration(); got != p.want {
			t.Errorf("%s: stream idle timeout %v, want %v", p.nodeID, got, p.want)
		}
	}
}
