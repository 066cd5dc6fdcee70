package authn_test

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
)

// parseConfigs decodes the Istio objects of a YAML stream; other kinds are
// skipped, bad documents fail the test.
func parseConfigs(t *testing.T, b []byte) []config.Config {
	t.Helper()
	var out []config.Config
	for _, d := range crd.Parse(b, crd.Options{Domain: "cluster.local", Validate: true}) {
		switch {
		case d.Err != nil:
			t.Fatalf("%s: %v", d.Where(), d.Err)
		case d.Config != nil:
			out = append(out, *d.Config)
		}
	}
	return out
}

// meshOf applies mesh config YAML over the defaults.
func meshOf(t *testing.T, text string) *meshconfig.MeshConfig {
	t.Helper()
	m, _, err := mesh.ApplyMeshConfig(text, mesh.DefaultMeshConfig())
	if err != nil {
		t.Fatalf("mesh config: %v", err)
	}
	return m
}

// pushOf builds a real push context over the configs.
func pushOf(t *testing.T, m *meshconfig.MeshConfig, cfgs []config.Config) *model.PushContext {
	t.Helper()
	store := memory.New(collections.Pilot)
	for _, c := range cfgs {
		if _, err := store.Create(c); err != nil {
			t.Fatalf("create %s: %v", c.Name, err)
		}
	}
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, Mesh: func() *meshconfig.MeshConfig { return m }})
	return model.InitContext(env, nil, nil)
}

func sidecar(ns string, labels map[string]string) *model.Proxy {
	return &model.Proxy{Type: model.SidecarProxy, ConfigNamespace: ns, Labels: labels,
		Metadata: &model.NodeMetadata{Namespace: ns, Labels: labels, Raw: map[string]any{}}}
}

// jsonOf is the protojson form of m as generic JSON.
func jsonOf(t *testing.T, m proto.Message) any {
	t.Helper()
	b, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func joinLines(lines []string) string { return strings.Join(lines, "\n") }
