package authz_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/security/authz"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/tests/golden"
)

// goldenOptions is the spec of the optional TestOptions document of a case.
type goldenOptions struct {
	// Mesh is mesh config (YAML/JSON), applied over Istio's defaults.
	Mesh json.RawMessage `json:"mesh"`
	// Services are the hostnames the cluster lookup knows.
	Services                     []string `json:"services"`
	PeerPrincipalFromFilterState bool     `json:"peerPrincipalFromFilterState"`
	MultipleCustomProviders      bool     `json:"multipleCustomProviders"`
}

// loadCase reads testdata/<case>.yaml: AuthorizationPolicies in the order
// the push context would give them, and at most one document
// `kind: TestOptions` (any apiVersion) whose spec is a goldenOptions.
func loadCase(t *testing.T, path string) ([]config.Config, authz.Options) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var policies []config.Config
	opts := authz.Options{Mesh: mesh.DefaultMeshConfig()}
	for _, d := range crd.Parse(b, crd.Options{Domain: "cluster.local"}) {
		switch {
		case d.Err != nil:
			t.Fatalf("%s: %v", d.Where(), d.Err)
		case d.Unknown != nil && d.Unknown.Kind == "TestOptions":
			var o goldenOptions
			if err := json.Unmarshal(d.Unknown.Spec, &o); err != nil {
				t.Fatalf("%s: %v", d.Where(), err)
			}
			if len(o.Mesh) > 0 {
				m, _, err := mesh.ApplyMeshConfig(string(o.Mesh), mesh.DefaultMeshConfig())
				if err != nil {
					t.Fatalf("%s: mesh: %v", d.Where(), err)
				}
				opts.Mesh = m
			}
			opts.LookupCluster = knownServices(o.Services...)
			opts.PeerPrincipalFromFilterState = o.PeerPrincipalFromFilterState
			opts.MultipleCustomProviders = o.MultipleCustomProviders
		case d.Config != nil && d.Config.GroupVersionKind.Kind == "AuthorizationPolicy":
			policies = append(policies, *d.Config)
		default:
			t.Fatalf("%s: unexpected document", d.Where())
		}
	}
	return policies, opts
}

func warningStrings(ws []authz.Warning) []string {
	out := []string{}
	for _, w := range ws {
		out = append(out, w.Error())
	}
	return out
}

// TestGolden builds every testdata/<case>.yaml and compares the HTTP and
// TCP filters and warnings with testdata/<case>.golden.json (rewritten with
// -update).
func TestGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
	var files golden.Files
	for _, in := range cases {
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		t.Run(name, func(t *testing.T) {
			policies, opts := loadCase(t, in)
			b := authz.New(opts)
			h, tc := b.BuildHTTP(policies), b.BuildTCP(policies)
			out := map[string]any{
				"http": map[string]any{"custom": asJSON(t, h.Custom), "local": asJSON(t, h.Local), "warnings": warningStrings(h.Warnings)},
				"tcp":  map[string]any{"custom": asJSON(t, tc.Custom), "local": asJSON(t, tc.Local), "warnings": warningStrings(tc.Warnings)},
			}
			got, err := json.MarshalIndent(out, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			files.Check(t, filepath.Join("testdata", name+".golden.json"), got)
		})
	}
	files.Orphans(t, "testdata/*.golden.json")
}
