package generators_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	meshconfig "istio.io/api/mesh/v1alpha1"

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
	"github.com/meshplane/istiod/tests/goldencases"
)

// goldenCase is a case of the table testdata/cases.yaml (see
// tests/goldencases), which tests/differential's TestGolden also runs
// against Istio's pilot-discovery.
type goldenCase struct {
	name   string
	group  string
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
	// hashAllocate is PILOT_ENABLE_IP_AUTOALLOCATE=false
	hashAllocate bool
}

// casesFile is the table of the golden cases.
var casesFile = filepath.Join("testdata", "cases.yaml")

var goldenCases = loadGoldenCases()

// loadGoldenCases reads the table; a case's mesh YAML applies over the
// mesh it is given.
func loadGoldenCases() []goldenCase {
	table, err := goldencases.Load(casesFile)
	if err != nil {
		panic(err)
	}
	var out []goldenCase
	for _, c := range table {
		gc := goldenCase{name: c.Name, group: c.Group, nodeID: c.NodeID, ns: c.Namespace, routes: c.Routes, meta: c.Meta,
			sidecarIngressTLS: c.SidecarIngressTLS, dualStack: c.DualStack, hashAllocate: c.HashAllocate,
			protocols: listener.ProtocolFilters{Redis: c.Protocols.Redis, MySQL: c.Protocols.MySQL}}
		if c.Labels != nil {
			gc.labels = map[string]any{}
			for k, v := range c.Labels {
				gc.labels[k] = v
			}
		}
		if c.Mesh != "" {
			if _, _, err := mesh.ApplyMeshConfig(c.Mesh, mesh.DefaultMeshConfig()); err != nil {
				panic(fmt.Sprintf("%s: case %s: mesh: %v", casesFile, c.Name, err))
			}
			text := c.Mesh
			gc.mesh = func(m *meshconfig.MeshConfig) {
				out, _, err := mesh.ApplyMeshConfig(text, m)
				if err != nil {
					panic(err)
				}
				proto.Reset(m)
				proto.Merge(m, out)
			}
		}
		out = append(out, gc)
	}
	return out
}

// casesIn are the golden cases of a group of the table.
func casesIn(group string) []goldenCase {
	var out []goldenCase
	for _, gc := range goldenCases {
		if gc.group == group {
			out = append(out, gc)
		}
	}
	return out
}

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
	return envFromFileWith(t, path, meshMod, false)
}

// envFromFileWith is envFromFile, with PILOT_ENABLE_IP_AUTOALLOCATE=false
// when hashAllocate (the registry's hashed addresses).
func envFromFileWith(t *testing.T, path string, meshMod func(*meshconfig.MeshConfig), hashAllocate bool) (*model.Environment, *model.EndpointIndex, model.ServiceDiscovery) {
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
	se := serviceentry.NewController(store, serviceentry.Options{XDSUpdater: model.NewEndpointIndexUpdater(idx, model.NewRecordingXDSUpdater(100)), Stop: stop,
		HashAllocate: hashAllocate})
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
		Mesh: func() *meshconfig.MeshConfig { return m }, HashAllocatedAddresses: hashAllocate})
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
			env, idx, disc := envFromFileWith(t, filepath.Join("testdata", gc.name+".yaml"), gc.mesh, gc.hashAllocate)
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
