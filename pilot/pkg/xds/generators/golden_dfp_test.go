package generators_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

// Dynamic forward proxy cases: a DYNAMIC_DNS wildcard ServiceEntry (Istio's
// buildDFPCluster and the forward proxy filters of its chains) and the
// mesh's ALLOW_ANY_DYNAMIC_DNS outbound policy (buildAllowAnyDFPCluster,
// virtualOutbound's HTTP chain and the allow_any_dynamic_dns catch-all
// host). See the case files.
var dfpCases = casesIn("dfp")

// TestDFPCasesValid runs Envoy's validation on every cluster and listener
// of the dynamic forward proxy cases.
func TestDFPCasesValid(t *testing.T) {
	for _, gc := range dfpCases {
		t.Run(gc.name, func(t *testing.T) { checkCaseValid(t, gc.name) })
	}
}

// serveCase serves a golden case's config under a changed mesh (and
// extra config appended to the case file) and returns the rendered
// clusters and listeners.
func serveCase(t *testing.T, name string, meshMod func(*meshconfig.MeshConfig), extra string) (cds, lds []byte) {
	t.Helper()
	gc := findCase(t, name)
	b, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, append(b, []byte(extra)...), 0o600); err != nil {
		t.Fatal(err)
	}
	env, idx, disc := envFromFile(t, path, func(m *meshconfig.MeshConfig) {
		if gc.mesh != nil {
			gc.mesh(m)
		}
		meshMod(m)
	})
	c := dialCase(t, gc, env, idx, disc)
	xdstest.WatchInTurn(t, c, xdstest.Watch{Type: xds.ClusterType}, xdstest.Watch{Type: xds.ListenerType})
	return render(t, c, xds.ClusterType), render(t, c, xds.ListenerType)
}

func dynamicDNSMesh(m *meshconfig.MeshConfig) {
	m.OutboundTrafficPolicy = &meshconfig.MeshConfig_OutboundTrafficPolicy{Mode: meshconfig.MeshConfig_OutboundTrafficPolicy_ALLOW_ANY_DYNAMIC_DNS}
}

// ALLOW_ANY_DYNAMIC_DNS is for sidecars only: a gateway's clusters and
// listeners stay as under ALLOW_ANY.
func TestAllowAnyDynamicDNSLeavesGateways(t *testing.T) {
	cds, lds := serveCase(t, "gateway-servers", dynamicDNSMesh, "")
	for typ, got := range map[string][]byte{"cds": cds, "lds": lds} {
		want, err := os.ReadFile(filepath.Join("testdata", "gateway-servers."+typ+".golden.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("gateway %s changed under ALLOW_ANY_DYNAMIC_DNS", typ)
		}
	}
}

// A Sidecar's own outboundTrafficPolicy wins over the mesh's: REGISTRY_ONLY
// or ALLOW_ANY drops every part of the forward proxy (the Sidecar API has
// no ALLOW_ANY_DYNAMIC_DNS of its own), as does an ALLOW_ANY mesh.
func TestAllowAnyDynamicDNSFollowsSidecar(t *testing.T) {
	sidecar := func(mode string) string {
		return "\n---\napiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: default, namespace: app}\nspec:\n  outboundTrafficPolicy: {mode: " + mode + "}\n"
	}
	for _, tc := range []struct {
		name    string
		meshMod func(*meshconfig.MeshConfig)
		extra   string
		want    bool
	}{
		{"mesh", dynamicDNSMesh, "", true},
		{"sidecar registry only", dynamicDNSMesh, sidecar("REGISTRY_ONLY"), false},
		{"sidecar allow any", dynamicDNSMesh, sidecar("ALLOW_ANY"), false},
		{"mesh allow any", func(m *meshconfig.MeshConfig) { m.OutboundTrafficPolicy = nil }, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cds, lds := serveCase(t, "sidecar-allow-any-dynamic-dns", tc.meshMod, tc.extra)
			if got := bytes.Contains(cds, []byte(`"AllowAnyDynamicDNSCluster"`)); got != tc.want {
				t.Errorf("forward proxy cluster: %v, want %v", got, tc.want)
			}
			if got := bytes.Contains(lds, []byte(`envoy.filters.http.dynamic_forward_proxy`)); got != tc.want {
				t.Errorf("forward proxy filters: %v, want %v", got, tc.want)
			}
		})
	}
}
