package generators_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

// TestRouterParityResourcesValid: every cluster and listener of the
// gateway TCP route, IPv6 and dual-stack cases passes Envoy's own
// validation.
func TestRouterParityResourcesValid(t *testing.T) {
	for _, name := range []string{"gateway-tcp-routes", "gateway-ipv6", "gateway-dual-stack"} {
		t.Run(name, func(t *testing.T) {
			checkCaseValid(t, name)
		})
	}
}

// routerProxy is a pod of one gateway deployment (same namespace, labels
// and Gateway) that differs from the others only in its IDLE_TIMEOUT or
// addresses, and what it must get whatever pod connected before it.
type routerProxy struct {
	name, nodeID string
	meta         map[string]any
	// idle is the timeout of the HTTP chain's connection manager and of
	// the TCP chain's proxy (0: none)
	idle time.Duration
	// wildcard is where the port 80 listener listens, extra its
	// additional addresses
	wildcard string
	extra    []string
	// dnsFamily is the family of the DNS clusters (outbound and SNI-DNAT)
	dnsFamily clusterv3.Cluster_DnsLookupFamily
}

var routerProxies = []routerProxy{
	{name: "v4-idle", nodeID: "router~10.244.9.1~gw-a.istio-system~istio-system.svc.cluster.local", meta: map[string]any{"IDLE_TIMEOUT": "45s"},
		idle: 45 * time.Second, wildcard: "0.0.0.0", dnsFamily: clusterv3.Cluster_V4_ONLY},
	{name: "v4", nodeID: "router~10.244.9.2~gw-b.istio-system~istio-system.svc.cluster.local",
		wildcard: "0.0.0.0", dnsFamily: clusterv3.Cluster_V4_ONLY},
	{name: "v4-idle-2m", nodeID: "router~10.244.9.3~gw-c.istio-system~istio-system.svc.cluster.local", meta: map[string]any{"IDLE_TIMEOUT": "2m"},
		idle: 2 * time.Minute, wildcard: "0.0.0.0", dnsFamily: clusterv3.Cluster_V4_ONLY},
	{name: "v6", nodeID: "router~fd00::9~gw-d.istio-system~istio-system.svc.cluster.local",
		wildcard: "::", dnsFamily: clusterv3.Cluster_V6_ONLY},
	{name: "dual", nodeID: "router~10.244.9.5~gw-e.istio-system~istio-system.svc.cluster.local", meta: map[string]any{"INSTANCE_IPS": "10.244.9.5,fd00::5"},
		wildcard: "0.0.0.0", extra: []string{"::"}, dnsFamily: clusterv3.Cluster_ALL},
	{name: "v6-idle", nodeID: "router~fd00::10~gw-f.istio-system~istio-system.svc.cluster.local", meta: map[string]any{"IDLE_TIMEOUT": "45s"},
		idle: 45 * time.Second, wildcard: "::", dnsFamily: clusterv3.Cluster_V6_ONLY},
}

// TestRouterModesNeverShareResources: pods of one gateway deployment that
// differ only in IDLE_TIMEOUT or IP mode each get their own listeners and
// DNS clusters, in every order they connect in (router clusters are cached
// per service for the snapshot).
func TestRouterModesNeverShareResources(t *testing.T) {
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5}, {5, 4, 3, 2, 1, 0}, {1, 3, 0, 4, 5, 2}} {
		s := serveFile(t, filepath.Join("testdata", "gateway-dual-stack.yaml"), nil, func(g *generators.SidecarGenerators) { g.DualStack = true })
		for _, i := range order {
			p := routerProxies[i]
			md := map[string]any{"NAMESPACE": "istio-system", "LABELS": map[string]any{"istio": "ingressgateway"}}
			for k, v := range p.meta {
				md[k] = v
			}
			c := xdstest.Dial(t, s, adsc.Config{NodeID: p.nodeID, Metadata: md})
			xdstest.WatchInTurn(t, c, xdstest.Watch{Type: xds.ClusterType}, xdstest.Watch{Type: xds.ListenerType})
			checkRouterProxy(t, c, p, order)
		}
	}
}

func checkRouterProxy(t *testing.T, c *adsc.Client, p routerProxy, order []int) {
	t.Helper()
	for _, n := range []string{"outbound|7000||ledger.shop.svc.cluster.local", "outbound_.7000_._.ledger.shop.svc.cluster.local",
		"outbound|443||api.partner.example.com"} {
		cl, _ := c.Resource(xds.ClusterType, n).(*clusterv3.Cluster)
		if cl == nil {
			t.Fatalf("%v %s: no cluster %s", order, p.name, n)
		}
		if got := cl.GetDnsLookupFamily(); got != p.dnsFamily {
			t.Errorf("%v %s: %s resolves %v, want %v", order, p.name, n, got, p.dnsFamily)
		}
	}
	web, _ := c.Resource(xds.ListenerType, p.wildcard+"_80").(*listenerv3.Listener)
	if web == nil {
		t.Fatalf("%v %s: no listener %s_80 in %v", order, p.name, p.wildcard, c.State(xds.ListenerType))
	}
	var extra []string
	for _, a := range web.AdditionalAddresses {
		extra = append(extra, a.GetAddress().GetSocketAddress().GetAddress())
	}
	if !slices.Equal(extra, p.extra) {
		t.Errorf("%v %s: %s additional addresses %v, want %v", order, p.name, web.Name, extra, p.extra)
	}
	m := &hcm.HttpConnectionManager{}
	if err := web.FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetCommonHttpProtocolOptions().GetIdleTimeout().AsDuration(); got != p.idle {
		t.Errorf("%v %s: HCM idle timeout %v, want %v", order, p.name, got, p.idle)
	}
	// the TCP server binds to fd00::9 whatever the pod's addresses
	tcp, _ := c.Resource(xds.ListenerType, "fd00::9_9090").(*listenerv3.Listener)
	if tcp == nil {
		t.Fatalf("%v %s: no listener fd00::9_9090", order, p.name)
	}
	fs := tcp.FilterChains[0].Filters
	tp := &tcpproxy.TcpProxy{}
	if err := fs[len(fs)-1].GetTypedConfig().UnmarshalTo(tp); err != nil {
		t.Fatal(err)
	}
	if got := tp.GetIdleTimeout().AsDuration(); got != p.idle {
		t.Errorf("%v %s: tcp_proxy idle timeout %v, want %v", order, p.name, got, p.idle)
	}
	for _, n := range c.State(xds.ListenerType) {
		if strings.HasPrefix(n, "0.0.0.0_") != (p.wildcard == "0.0.0.0") && !strings.HasPrefix(n, "fd00::9_") {
			t.Errorf("%v %s: listener %s on another family's wildcard", order, p.name, n)
		}
	}
}

// redisGateway is an AUTO_PASSTHROUGH gateway in front of a Redis service.
const redisGateway = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: cache, namespace: shop}
spec:
  hosts: [cache.shop.svc.cluster.local]
  addresses: [10.96.20.60]
  ports: [{number: 6379, name: redis, protocol: REDIS}]
  resolution: STATIC
  location: MESH_INTERNAL
  endpoints: [{address: 10.244.1.60}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: edge, namespace: shop}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 15443, name: tls-mesh, protocol: TLS}
    hosts: ["*.shop.svc.cluster.local"]
    tls: {mode: AUTO_PASSTHROUGH}
`

// TestRouterRedisFilter: under PILOT_ENABLE_REDIS_FILTER a gateway's Redis
// clusters, outbound and SNI-DNAT, balance by MAGLEV and its
// AUTO_PASSTHROUGH chain to the Redis port is a redis_proxy, as Istio's
// shared cluster and network filter builders make them; with the flag off
// (Istio's default) neither.
func TestRouterRedisFilter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "redis.yaml")
	if err := os.WriteFile(path, []byte(redisGateway), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, on := range []bool{true, false} {
		s := serveFile(t, path, nil, func(g *generators.SidecarGenerators) { g.ProtocolFilters.Redis = on })
		c := xdstest.Dial(t, s, adsc.Config{NodeID: "router~10.244.9.1~gw-a.istio-system~istio-system.svc.cluster.local",
			Metadata: map[string]any{"NAMESPACE": "istio-system", "LABELS": map[string]any{"istio": "ingressgateway"}}})
		xdstest.WatchInTurn(t, c, xdstest.Watch{Type: xds.ClusterType}, xdstest.Watch{Type: xds.ListenerType})
		want := clusterv3.Cluster_LEAST_REQUEST
		stack := "envoy.filters.network.tcp_proxy"
		if on {
			want, stack = clusterv3.Cluster_MAGLEV, "envoy.filters.network.redis_proxy"
		}
		for _, n := range []string{"outbound|6379||cache.shop.svc.cluster.local", "outbound_.6379_._.cache.shop.svc.cluster.local"} {
			cl, _ := c.Resource(xds.ClusterType, n).(*clusterv3.Cluster)
			if cl == nil {
				t.Fatalf("redis filter %v: no cluster %s", on, n)
			}
			if cl.GetLbPolicy() != want {
				t.Errorf("redis filter %v: %s balances by %v, want %v", on, n, cl.GetLbPolicy(), want)
			}
		}
		l, _ := c.Resource(xds.ListenerType, "0.0.0.0_15443").(*listenerv3.Listener)
		if l == nil || len(l.FilterChains) != 1 {
			t.Fatalf("redis filter %v: listener 0.0.0.0_15443 %v", on, l)
		}
		if fs := l.FilterChains[0].Filters; len(fs) != 1 || fs[0].Name != stack {
			t.Errorf("redis filter %v: AUTO_PASSTHROUGH chain %v, want %s", on, fs, stack)
		}
	}
}
