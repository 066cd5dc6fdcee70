package generators_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/aggregate"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/serviceentry"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/tests/golden"
)

type goldenCase struct {
	name   string
	nodeID string
	ns     string
	mesh   func(*meshconfig.MeshConfig)
	routes []string
	labels map[string]any
	// meta is more node metadata (INTERCEPTION_MODE, UNPRIVILEGED_POD, ...)
	meta map[string]any
	// sidecarIngressTLS turns on ENABLE_TLS_ON_SIDECAR_INGRESS
	sidecarIngressTLS bool
	// protocols are the PILOT_ENABLE_{MONGO,REDIS,MYSQL}_FILTER switches
	protocols listener.ProtocolFilters
	// dualStack turns on ISTIO_DUAL_STACK
	dualStack bool
}

var goldenCases = []goldenCase{
	{name: "gateway-servers", nodeID: "router~10.244.9.1~ingress-abc.istio-system~istio-system.svc.cluster.local", ns: "istio-system",
		labels: map[string]any{"istio": "ingressgateway"}, routes: []string{"http.80", "https.443.https.edge.shop", "https.443.https-admin.edge.shop"}},
	{name: "bookinfo", nodeID: "sidecar~10.244.0.10~productpage-v1.bookinfo~bookinfo.svc.cluster.local", ns: "bookinfo", routes: []string{"9080"}},
	{name: "gateway-policy", nodeID: "router~10.244.9.1~ingress-abc.istio-system~istio-system.svc.cluster.local", ns: "istio-system",
		labels: map[string]any{"istio": "ingressgateway"}, routes: []string{"http.80"}},
	{name: "sidecar-ingress", nodeID: "sidecar~10.1.0.9~app-abc.app~app.svc.cluster.local", ns: "app", labels: map[string]any{"app": "app"}},
	{name: "registry-only", nodeID: "sidecar~10.1.0.9~client.app~app.svc.cluster.local", ns: "app",
		mesh: func(m *meshconfig.MeshConfig) {
			m.OutboundTrafficPolicy = &meshconfig.MeshConfig_OutboundTrafficPolicy{Mode: meshconfig.MeshConfig_OutboundTrafficPolicy_REGISTRY_ONLY}
		}},
	// Sidecar listeners that bind to their ports (Istio's
	// buildInboundChainConfigs / getBindToPort and
	// buildSidecarOutboundListeners): see the case file.
	{name: "sidecar-bind", nodeID: "sidecar~10.1.0.9~app-abc.app~app.svc.cluster.local", ns: "app", labels: map[string]any{"app": "app"},
		meta:   map[string]any{"UNPRIVILEGED_POD": "true", "ENVOY_STATUS_PORT": 15021, "ENVOY_PROMETHEUS_PORT": 15090},
		routes: []string{"8080", "9080", "8888", "raw.app.svc.cluster.local:7070", "unix:///var/run/app.sock"}},
	// A Sidecar whose listeners clash: see the case file.
	{name: "sidecar-conflicts", nodeID: "sidecar~10.1.0.9~app-abc.app~app.svc.cluster.local", ns: "app", labels: map[string]any{"app": "app"},
		meta: map[string]any{"UNPRIVILEGED_POD": "true", "ENVOY_PROMETHEUS_PORT": 15090}},
	// A service port on the proxy's status port.
	{name: "sidecar-static-port", nodeID: "sidecar~10.1.0.9~app-abc.app~app.svc.cluster.local", ns: "app", labels: map[string]any{"app": "app"},
		meta: map[string]any{"ENVOY_STATUS_PORT": 15021}},
	// A proxy without traffic redirection (INTERCEPTION_MODE NONE).
	{name: "sidecar-none-mode", nodeID: "sidecar~10.1.0.9~app-abc.app~app.svc.cluster.local", ns: "app", labels: map[string]any{"app": "app"},
		meta: map[string]any{"INTERCEPTION_MODE": "NONE"}, routes: []string{"80"}},
	// Service ports without a declared protocol (sniffed): see the case file.
	{name: "sidecar-sniffing", nodeID: "sidecar~10.1.0.9~client-abc.app~app.svc.cluster.local", ns: "app", labels: map[string]any{"app": "ring"},
		routes: []string{"8080", "7000", "6000", "legacy.app.svc.cluster.local:3000", "api.partner.example.com:9000",
			"cache.app.svc.cluster.local:8080", "queue.app.svc.cluster.local:5432", "ring.app.svc.cluster.local:4000"}},
	// Sidecar ingress tls with ENABLE_TLS_ON_SIDECAR_INGRESS on.
	{name: "sidecar-ingress-tls", nodeID: "sidecar~10.1.0.9~app-abc.app~app.svc.cluster.local", ns: "app", labels: map[string]any{"app": "app"},
		sidecarIngressTLS: true},
	// The same Sidecar with the flag off (Istio's default): tls is ignored.
	{name: "sidecar-ingress-tls-off", nodeID: "sidecar~10.1.0.9~app-abc.app~app.svc.cluster.local", ns: "app", labels: map[string]any{"app": "app"}},
	// VirtualService tcp routes and source-IP hashing on outbound TCP
	// chains: see the case file.
	{name: "sidecar-tcp-routes", nodeID: "sidecar~10.1.0.20~client-abc.app~app.svc.cluster.local", ns: "app", labels: map[string]any{"app": "client"}},
	// Connection pools and the upstream HTTP protocol of outbound
	// clusters under the mesh's h2UpgradePolicy and tcpKeepalive: see the
	// case file.
	{name: "sidecar-pool-protocol", nodeID: "sidecar~10.1.0.21~client-abc.app~app.svc.cluster.local", ns: "app",
		mesh: func(m *meshconfig.MeshConfig) {
			m.H2UpgradePolicy = meshconfig.MeshConfig_UPGRADE
			m.TcpKeepalive = &networking.ConnectionPoolSettings_TCPSettings_TcpKeepalive{Time: durationpb.New(600 * time.Second)}
			m.DefaultTrafficPolicy = &meshconfig.MeshConfig_DefaultTrafficPolicy{
				ConnectionPool:   &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 100}},
				OutlierDetection: &networking.OutlierDetection{Consecutive_5XxErrors: wrapperspb.UInt32(7)},
			}
		}},
	// Interception, IP modes and protocol detection: see the case files.
	{name: "sidecar-tproxy", nodeID: "sidecar~10.1.0.9~app-abc.app~app.svc.cluster.local", ns: "app", labels: map[string]any{"app": "app"},
		meta: map[string]any{"INTERCEPTION_MODE": "TPROXY"}},
	{name: "sidecar-dual-stack", nodeID: "sidecar~10.1.0.9~app-abc.app~app.svc.cluster.local", ns: "app", labels: map[string]any{"app": "app"},
		meta: map[string]any{"INSTANCE_IPS": "10.1.0.9,fd00::9"}, dualStack: true},
	{name: "sidecar-ipv6", nodeID: "sidecar~fd00::9~app-abc.app~app.svc.cluster.local", ns: "app", labels: map[string]any{"app": "app"}},
	{name: "sidecar-detection-timeout", nodeID: "sidecar~10.1.0.9~app-abc.app~app.svc.cluster.local", ns: "app", labels: map[string]any{"app": "app"},
		mesh: func(m *meshconfig.MeshConfig) { m.ProtocolDetectionTimeout = durationpb.New(5 * time.Second) }},
	// ProxyConfig connectionSettings: the mesh's on a sidecar, a gateway's
	// own EDGE profile (its PROXY_CONFIG wins over the mesh's).
	{name: "sidecar-connection-settings", nodeID: "sidecar~10.1.0.9~app-abc.app~app.svc.cluster.local", ns: "app", labels: map[string]any{"app": "app"},
		mesh: func(m *meshconfig.MeshConfig) {
			m.DefaultConfig.ConnectionSettings = &meshconfig.ProxyConfig_ConnectionSettings{Profile: meshconfig.ProxyConfig_ConnectionSettings_EDGE,
				HttpIdleTimeout: durationpb.New(10 * time.Minute), HttpStreamIdleTimeout: durationpb.New(2 * time.Minute),
				HttpMaxConcurrentStreams: wrapperspb.Int32(50), ListenerPerConnectionBufferLimitBytes: wrapperspb.Int32(1024),
				HttpHeadersWithUnderscoresAction: meshconfig.ProxyConfig_ConnectionSettings_HEADERS_WITH_UNDERSCORES_DROP_HEADER}
		}},
	{name: "gateway-edge-settings", nodeID: "router~10.244.9.1~ingress-abc.istio-system~istio-system.svc.cluster.local", ns: "istio-system",
		labels: map[string]any{"istio": "ingressgateway"}, routes: []string{"http.80"},
		meta: map[string]any{"PROXY_CONFIG": map[string]any{"connectionSettings": map[string]any{"profile": "EDGE", "httpIdleTimeout": "1800s",
			"httpMergeSlashes": false}}},
		mesh: func(m *meshconfig.MeshConfig) {
			m.DefaultConfig.ConnectionSettings = &meshconfig.ProxyConfig_ConnectionSettings{HttpDrainTimeout: durationpb.New(time.Second)}
		}},
}

// Outbound TLS and TCP chains as Istio's tls.go and networkfilter.go build
// them: see the case files.
var outboundChainCases = []goldenCase{
	// VirtualService tls routes on TLS and HTTPS ports.
	{name: "sidecar-tls-routes", nodeID: "sidecar~10.1.0.40~client-abc.app~app.svc.cluster.local", ns: "app", labels: map[string]any{"app": "client"}},
	// Mongo, Redis and MySQL filter stacks, the Redis and MySQL filters on.
	{name: "sidecar-protocols", nodeID: "sidecar~10.1.0.41~client-abc.app~app.svc.cluster.local", ns: "app",
		protocols: listener.ProtocolFilters{Redis: true, MySQL: true}},
	// DestinationRule tunnels on TCP chains.
	{name: "sidecar-tunnel", nodeID: "sidecar~10.1.0.42~client-abc.app~app.svc.cluster.local", ns: "app"},
	// The proxy's IDLE_TIMEOUT; the proxy is web's endpoint, so inbound
	// chains take it too.
	{name: "sidecar-idle-timeout", nodeID: "sidecar~10.5.0.3~web-abc.app~app.svc.cluster.local", ns: "app",
		meta: map[string]any{"IDLE_TIMEOUT": "45s"}},
}

func init() { goldenCases = append(goldenCases, outboundChainCases...) }

// serveFile serves the mesh of a test file with the sidecar generators,
// which mod (when set) configures, from its first snapshot.
func serveFile(t *testing.T, path string, meshMod func(*meshconfig.MeshConfig), mod func(*generators.SidecarGenerators)) *xdstest.Server {
	t.Helper()
	env, idx, disc := envFromFile(t, path, meshMod)
	s := xdstest.NewServer(t)
	g := &generators.SidecarGenerators{Endpoints: idx, Discovery: disc}
	if mod != nil {
		mod(g)
	}
	g.Register(s.DS)
	s.DS.InitPushContext(env)
	return s
}

// envFromFile loads a case into a store, runs the ServiceEntry registry on it
// and returns the environment generators read.
func envFromFile(t *testing.T, path string, meshMod func(*meshconfig.MeshConfig)) (*model.Environment, *model.EndpointIndex, model.ServiceDiscovery) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	store := memory.New(collections.Pilot)
	for _, d := range crd.Parse(b, crd.Options{Domain: "cluster.local", Validate: true}) {
		if d.Err != nil {
			t.Fatalf("%s: %s: %v", path, d.Where(), d.Err)
		}
		if d.Config != nil {
			if _, err := store.Create(*d.Config); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	idx := model.NewEndpointIndex()
	se := serviceentry.NewController(store, serviceentry.Options{XDSUpdater: model.NewEndpointIndexUpdater(idx, model.NewRecordingXDSUpdater(100)), Stop: stop})
	agg := aggregate.New(se)
	deadline := time.Now().Add(10 * time.Second)
	for !agg.HasSynced() {
		if time.Now().After(deadline) {
			t.Fatal("registry not synced")
		}
		time.Sleep(5 * time.Millisecond)
	}
	m := mesh.DefaultMeshConfig()
	if meshMod != nil {
		meshMod(m)
	}
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: agg, EndpointIndex: idx,
		Mesh: func() *meshconfig.MeshConfig { return m }})
	return env, idx, agg
}

// render turns held resources into stable JSON: an array sorted by name.
func render(t *testing.T, c *adsc.Client, typeURL string) []byte {
	t.Helper()
	var out []json.RawMessage
	names := c.State(typeURL)
	sort.Strings(names)
	for _, n := range names {
		b, err := protojson.MarshalOptions{}.Marshal(c.Resource(typeURL, n))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		_ = json.Compact(&buf, b)
		out = append(out, buf.Bytes())
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return append(b, '\n')
}

// findCase is the registered golden case of that name.
func findCase(t *testing.T, name string) goldenCase {
	t.Helper()
	for _, gc := range goldenCases {
		if gc.name == name {
			return gc
		}
	}
	t.Fatalf("no golden case %s", name)
	return goldenCase{}
}

// dialCase serves a golden case's environment with the generators set
// as the case asks and connects its proxy.
func dialCase(t *testing.T, gc goldenCase, env *model.Environment, idx *model.EndpointIndex, disc model.ServiceDiscovery) *adsc.Client {
	t.Helper()
	c, _ := dialCaseServer(t, gc, env, idx, disc)
	return c
}

// dialCaseServer is dialCase, also returning the server.
func dialCaseServer(t *testing.T, gc goldenCase, env *model.Environment, idx *model.EndpointIndex, disc model.ServiceDiscovery) (*adsc.Client, *xdstest.Server) {
	t.Helper()
	s := xdstest.NewServer(t)
	gens := &generators.SidecarGenerators{Endpoints: idx, Discovery: disc, SidecarIngressTLS: gc.sidecarIngressTLS, DualStack: gc.dualStack}
	gens.ProtocolFilters = gc.protocols
	gens.Register(s.DS)
	s.DS.InitPushContext(env)
	md := map[string]any{"NAMESPACE": gc.ns}
	if gc.labels != nil {
		md["LABELS"] = gc.labels
	}
	for k, v := range gc.meta {
		md[k] = v
	}
	return xdstest.Dial(t, s, adsc.Config{NodeID: gc.nodeID, Metadata: md}), s
}

func TestGoldens(t *testing.T) {
	var files golden.Files
	for _, gc := range goldenCases {
		t.Run(gc.name, func(t *testing.T) {
			env, idx, disc := envFromFile(t, filepath.Join("testdata", gc.name+".yaml"), gc.mesh)
			c := dialCase(t, gc, env, idx, disc)
			watch := func(typeURL string, names ...string) {
				if err := c.Watch(typeURL, names...); err != nil {
					t.Fatal(err)
				}
				xdstest.Next(t, c)
			}
			watch(xds.ClusterType)
			var eds []string
			for _, n := range c.State(xds.ClusterType) {
				if strings.HasPrefix(n, "outbound|") || strings.HasPrefix(n, "outbound_.") {
					eds = append(eds, n)
				}
			}
			watch(xds.EndpointType, eds...)
			watch(xds.ListenerType)
			if len(gc.routes) > 0 {
				watch(xds.RouteType, gc.routes...)
			}
			for _, typ := range []string{xds.ClusterType, xds.EndpointType, xds.ListenerType, xds.RouteType} {
				if typ == xds.RouteType && len(gc.routes) == 0 {
					continue
				}
				files.Check(t, filepath.Join("testdata", gc.name+"."+xds.ShortType(typ)+".golden.json"), render(t, c, typ))
			}
		})
	}
	files.Orphans(t, "testdata/*.golden.json")
}
