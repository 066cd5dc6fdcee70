package envoyfilter_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/envoyfilter"
	"github.com/meshplane/istiod/tests/golden"
)

// goldenCase is one testdata/<case>.yaml: a proxy, EnvoyFilters and the
// resources generated for the proxy before patching.
type goldenCase struct {
	Proxy struct {
		Type      string            `json:"type"` // sidecar (default), router, waypoint
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
		Version   string            `json:"version"`
		Metadata  map[string]string `json:"metadata"`
	} `json:"proxy"`
	RootNamespace string `json:"rootNamespace"` // istio-system by default
	Context       struct {
		GatewayPorts        map[int][]int       `json:"gatewayPorts"`
		InboundClusterHosts map[string][]string `json:"inboundClusterHosts"`
	} `json:"context"`
	EnvoyFilters     []json.RawMessage `json:"envoyFilters"`
	Listeners        []json.RawMessage `json:"listeners"`
	Clusters         []json.RawMessage `json:"clusters"`
	Routes           []json.RawMessage `json:"routes"`
	ExtensionConfigs []string          `json:"extensionConfigs"`
}

// goldenResult is what testdata/<case>.golden.json holds.
type goldenResult struct {
	Patches          int      `json:"patches"`
	Listeners        any      `json:"listeners,omitempty"`
	Clusters         any      `json:"clusters,omitempty"`
	Routes           any      `json:"routes,omitempty"`
	ExtensionConfigs any      `json:"extensionConfigs,omitempty"`
	Problems         []string `json:"problems,omitempty"`
	Conflicts        []string `json:"conflicts,omitempty"`
}

// TestGolden runs every testdata case: per operation and applyTo, the
// patched resources, the problems and the conflicts (rewritten with
// -update). Every case also checks that its input is left untouched.
func TestGolden(t *testing.T) {
	var files golden.Files
	cases, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, file := range cases {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			files.Check(t, strings.TrimSuffix(file, ".yaml")+".golden.json", runGolden(t, file))
		})
	}
	files.Orphans(t, "testdata/*.golden.json")
}

func runGolden(t *testing.T, file string) []byte {
	var c goldenCase
	if err := yaml.UnmarshalStrict(readFile(t, file), &c); err != nil {
		t.Fatal(err)
	}
	root := c.RootNamespace
	if root == "" {
		root = "istio-system"
	}
	var docs []string
	for _, ef := range c.EnvoyFilters {
		docs = append(docs, string(ef))
	}
	filters := compileAll(t, parseFilters(t, strings.Join(docs, "\n---\n")))
	res := goldenResult{}
	for _, f := range filters {
		res.Problems = append(res.Problems, problemStrings(f.Problems())...)
	}
	ps := envoyfilter.Select(goldenProxy(c), root, filters)
	res.Patches = ps.Len()
	pc := envoyfilter.PatchContext{GatewayPorts: c.Context.GatewayPorts, InboundClusterHosts: c.Context.InboundClusterHosts}
	if c.Listeners != nil {
		in := decodeList(t, rawList(t, c.Listeners), func() *listenerv3.Listener { return &listenerv3.Listener{} })
		res.Listeners = patchChecked(t, ps, pc, in, envoyfilter.PatchListeners, &res.Problems)
	}
	if c.Clusters != nil {
		in := decodeList(t, rawList(t, c.Clusters), func() *clusterv3.Cluster { return &clusterv3.Cluster{} })
		res.Clusters = patchChecked(t, ps, pc, in, envoyfilter.PatchClusters, &res.Problems)
	}
	if c.Routes != nil {
		in := decodeList(t, rawList(t, c.Routes), func() *routev3.RouteConfiguration { return &routev3.RouteConfiguration{} })
		res.Routes = patchChecked(t, ps, pc, in, envoyfilter.PatchRoutes, &res.Problems)
	}
	if c.ExtensionConfigs != nil {
		res.ExtensionConfigs = decodeJSON(t, encodeList(t, envoyfilter.ExtensionConfigs(ps, c.ExtensionConfigs)))
	}
	res.Conflicts = problemStrings(envoyfilter.Conflicts(ps))
	out, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// patchChecked patches in, checks that in is unchanged, and returns the
// result as decoded JSON.
func patchChecked[T validatedProto](t *testing.T, ps *envoyfilter.Patches, pc envoyfilter.PatchContext, in []T,
	patch func(*envoyfilter.Patches, envoyfilter.PatchContext, []T) ([]T, []envoyfilter.Problem), problems *[]string,
) any {
	t.Helper()
	before := encodeList(t, in)
	got, ps2 := patch(ps, pc, in)
	if !bytes.Equal(before, encodeList(t, in)) {
		t.Errorf("patching modified its input")
	}
	*problems = append(*problems, problemStrings(ps2)...)
	return decodeJSON(t, encodeList(t, got))
}

func rawList(t *testing.T, items []json.RawMessage) []byte {
	b, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func goldenProxy(c goldenCase) *model.Proxy {
	ns := c.Proxy.Namespace
	if ns == "" {
		ns = "default"
	}
	p := sidecar(ns, c.Proxy.Labels)
	switch c.Proxy.Type {
	case "router":
		p.Type = model.Router
	case "waypoint":
		p.Type = model.Waypoint
	}
	switch c.Proxy.Version {
	case "":
	case "none":
		p.Metadata.IstioVersion = ""
	default:
		p.Metadata.IstioVersion = c.Proxy.Version
	}
	for k, v := range c.Proxy.Metadata {
		p.Metadata.Raw[k] = v
	}
	return p
}
