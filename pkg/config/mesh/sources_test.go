package mesh_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pkg/config/mesh"
)

func sourceNames(srcs []mesh.Source) string {
	var names []string
	for _, s := range srcs {
		name := s.Name()
		if strings.HasPrefix(name, "file:") {
			name = "file"
		}
		names = append(names, name)
	}
	return strings.Join(names, ",")
}

func TestSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mesh")
	writeFile(t, file, goodA)
	primary := mesh.NewStaticSource("primary", ptr(goodB))
	shared := mesh.NewStaticSource("shared", ptr(goodB))

	cases := []struct {
		name       string
		file       string
		fileExists bool
		primary    mesh.Source
		shared     mesh.Source
		want       string
	}{
		{name: "file only", file: file, fileExists: true, want: "file"},
		{name: "file beats primary", file: file, fileExists: true, primary: primary, want: "file"},
		{name: "shared before file", file: file, fileExists: true, primary: primary, shared: shared, want: "shared,file"},
		{name: "primary without file", file: file, primary: primary, want: "primary"},
		{name: "shared before primary", file: file, primary: primary, shared: shared, want: "shared,primary"},
		{name: "nothing", file: file, want: ""},
		{name: "shared needs a kube client", file: file, shared: shared, want: ""},
		{name: "unwatchable file falls back", file: filepath.Join(dir, "nodir", "mesh"), fileExists: true, primary: primary, want: "primary"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			defer close(stop)
			log, _ := testLogger()
			got := mesh.Sources(tc.file, tc.fileExists, tc.primary, tc.shared, mesh.WithStop(stop), mesh.WithLogger(log))
			if names := sourceNames(got); names != tc.want {
				t.Errorf("sources = %q, want %q", names, tc.want)
			}
		})
	}
}

// TestSharedOverlayOrder: the SHARED_MESH_CONFIG map is applied first, the
// mesh file (or primary ConfigMap) overrides it where both set a field.
func TestSharedOverlayOrder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mesh")
	writeFile(t, file, "trustDomain: file.local\ndefaultConfig:\n  proxyMetadata:\n    FROM: file\n")
	shared := mesh.NewStaticSource("shared", ptr(`trustDomain: shared.local
enableTracing: false
defaultConfig:
  proxyMetadata:
    FROM: shared
    SHARED_ONLY: "1"
`))
	stop := make(chan struct{})
	defer close(stop)
	srcs := mesh.Sources(file, true, mesh.NewStaticSource("primary", ptr("trustDomain: primary.local\n")), shared, mesh.WithStop(stop))
	w := mesh.NewWatcher(srcs, stop)

	m := w.Mesh()
	if m.TrustDomain != "file.local" {
		t.Errorf("trustDomain = %q: the file must override the shared overlay", m.TrustDomain)
	}
	if m.EnableTracing {
		t.Error("enableTracing: the shared overlay must apply where the file is silent")
	}
	md := m.GetDefaultConfig().GetProxyMetadata()
	if md["FROM"] != "file" || md["SHARED_ONLY"] != "1" {
		t.Errorf("proxyMetadata = %v", md)
	}
}
