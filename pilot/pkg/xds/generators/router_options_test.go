package generators_test

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/monitoring"
)

const optionsMesh = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: web, namespace: shop}
spec:
  hosts: [web.shop.svc.cluster.local]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.244.1.10}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: unused, namespace: shop}
spec:
  hosts: [unused.shop.svc.cluster.local]
  ports: [{number: 9090, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.244.1.11}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: gw, namespace: shop}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: [shop.example.com]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: shop}
spec:
  hosts: [shop.example.com]
  gateways: [gw]
  http:
  - route: [{destination: {host: web.shop.svc.cluster.local}}]
`

func routerState(t *testing.T, gens *generators.SidecarGenerators, scope bool, ns string, typ string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mesh.yaml")
	if err := os.WriteFile(path, []byte(optionsMesh), 0o600); err != nil {
		t.Fatal(err)
	}
	env, idx, disc := envFromFile(t, path, nil)
	if scope {
		o := env.Options()
		o.ScopeGatewayToNamespace = true
		env = model.NewEnvironment(o)
	}
	gens.Endpoints, gens.Discovery = idx, disc
	s := xdstest.NewServer(t)
	gens.Register(s.DS)
	s.DS.InitPushContext(env)
	c := xdstest.Dial(t, s, adsc.Config{NodeID: "router~10.244.9.1~gw-abc." + ns + "~" + ns + ".svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": ns, "LABELS": map[string]any{"istio": "ingressgateway"}}})
	if err := c.Watch(typ); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, c)
	got := c.State(typ)
	sort.Strings(got)
	return got
}

// PILOT_FILTER_GATEWAY_CLUSTER_CONFIG: only the services the gateway's
// routes reach; without it, every service the gateway sees.
func TestFilterGatewayClusters(t *testing.T) {
	all := []string{"BlackHoleCluster", "outbound|8080||web.shop.svc.cluster.local", "outbound|9090||unused.shop.svc.cluster.local"}
	if got := routerState(t, &generators.SidecarGenerators{}, false, "istio-system", xds.ClusterType); !reflect.DeepEqual(got, all) {
		t.Errorf("unfiltered: %v, want %v", got, all)
	}
	want := []string{"BlackHoleCluster", "outbound|8080||web.shop.svc.cluster.local"}
	if got := routerState(t, &generators.SidecarGenerators{FilterGatewayClusters: true}, false, "istio-system", xds.ClusterType); !reflect.DeepEqual(got, want) {
		t.Errorf("filtered: %v, want %v", got, want)
	}
}

// PILOT_SCOPE_GATEWAY_TO_NAMESPACE: a gateway proxy takes only the
// Gateways of its own namespace.
func TestScopeGatewayToNamespace(t *testing.T) {
	if got := routerState(t, &generators.SidecarGenerators{}, false, "istio-system", xds.ListenerType); !reflect.DeepEqual(got, []string{"0.0.0.0_80"}) {
		t.Errorf("unscoped: listeners %v, want [0.0.0.0_80]", got)
	}
	if got := routerState(t, &generators.SidecarGenerators{}, true, "istio-system", xds.ListenerType); len(got) != 0 {
		t.Errorf("scoped, other namespace: listeners %v, want none", got)
	}
	if got := routerState(t, &generators.SidecarGenerators{}, true, "shop", xds.ListenerType); !reflect.DeepEqual(got, []string{"0.0.0.0_80"}) {
		t.Errorf("scoped, the Gateway's namespace: listeners %v, want [0.0.0.0_80]", got)
	}
}

// A server dropped by the merge (here: the TCP server of a second Gateway,
// later by name, on a port the first already serves as HTTP) is on the snapshot's push
// status under the proxy, and counted in Istio's
// pilot_total_rejected_configs{type="gateway"}.
func TestGatewayMergeProblemsOnPushStatus(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mesh.yaml")
	conflict := optionsMesh + `---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: tcp, namespace: shop}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 80, name: tcp, protocol: TCP}
    hosts: ["*"]
`
	if err := os.WriteFile(path, []byte(conflict), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serveFile(t, path, nil, nil)
	before := rejectedConfigs(t, "shop/tcp")
	c := xdstest.Dial(t, s, adsc.Config{NodeID: "router~10.244.9.1~gw-abc.shop~shop.svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": "shop", "LABELS": map[string]any{"istio": "ingressgateway"}}})
	if err := c.Watch(xds.ListenerType); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, c)
	var got []string
	for key, st := range s.DS.PushContext().ProxyStatus()[model.MetricGatewayServerRejected] {
		if st.Proxy != "gw-abc.shop" {
			t.Errorf("%s: proxy %q", key, st.Proxy)
		}
		got = append(got, st.Message)
	}
	if len(got) != 1 || !strings.Contains(got[0], "gateway shop/tcp: server tcp (port 80) ignored") {
		t.Errorf("push status %v, want the TCP server of shop/tcp dropped", got)
	}
	if after := rejectedConfigs(t, "shop/tcp"); after <= before {
		t.Errorf("pilot_total_rejected_configs{name=shop/tcp} %v → %v", before, after)
	}
}

// rejectedConfigs reads pilot_total_rejected_configs of a gateway.
func rejectedConfigs(t *testing.T, gw string) float64 {
	t.Helper()
	mfs, err := monitoring.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "pilot_total_rejected_configs" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["type"] == "gateway" && labels["name"] == gw {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// A port without a declared protocol: a sidecar's cluster follows the
// downstream's HTTP version, a gateway's does not (Istio's
// setUpstreamProtocol), though both proxies read one snapshot's cache.
func TestSniffedPortClustersDifferForRouters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mesh.yaml")
	if err := os.WriteFile(path, []byte(optionsMesh+`---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: raw, namespace: shop}
spec:
  hosts: [raw.shop.svc.cluster.local]
  ports: [{number: 7070, name: raw}]
  resolution: STATIC
  endpoints: [{address: 10.244.1.12}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serveFile(t, path, nil, nil)
	const name = "outbound|7070||raw.shop.svc.cluster.local"
	downstream := func(node string, md map[string]any) bool {
		c := xdstest.Dial(t, s, adsc.Config{NodeID: node, Metadata: md})
		if err := c.Watch(xds.ClusterType); err != nil {
			t.Fatal(err)
		}
		xdstest.Next(t, c)
		cl, _ := c.Resource(xds.ClusterType, name).(*clusterv3.Cluster)
		if cl == nil {
			t.Fatalf("%s: no %s", node, name)
		}
		a := cl.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
		if a == nil {
			return false
		}
		var o httpv3.HttpProtocolOptions
		if err := a.UnmarshalTo(&o); err != nil {
			t.Fatal(err)
		}
		return o.GetUseDownstreamProtocolConfig() != nil
	}
	if !downstream("sidecar~10.244.3.1~app-abc.shop~shop.svc.cluster.local", map[string]any{"NAMESPACE": "shop"}) {
		t.Error("the sidecar's cluster does not use the downstream's protocol")
	}
	if downstream("router~10.244.9.1~gw-abc.shop~shop.svc.cluster.local", map[string]any{"NAMESPACE": "shop", "LABELS": map[string]any{"istio": "ingressgateway"}}) {
		t.Error("the gateway's cluster uses the downstream's protocol")
	}
}
