package mesh_test

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/validation"
	"github.com/meshplane/istiod/tests/refdata"
)

// readReference reads what Istio 1.31's istiod served for a known mesh file
// (rel is under the bookinfo reference, beside the repository root).
func readReference(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(refdata.Dir(t, "bookinfo/"+rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDefaultsMatchIstio applies the reference mesh file to the defaults and
// compares the result with Istio's /debug/mesh output as JSON values.
func TestDefaultsMatchIstio(t *testing.T) {
	input := readReference(t, "input/mesh.yaml")
	want := readReference(t, "real/mesh.json")

	got, warns, err := mesh.ApplyMeshConfig(string(input), mesh.DefaultMeshConfig())
	if err != nil {
		t.Fatal(err)
	}
	if !warns.Empty() {
		t.Errorf("unexpected warnings: %v", warns.Messages())
	}
	gotJSON, err := protojson.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var gotV, wantV any
	if err := json.Unmarshal(gotJSON, &gotV); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &wantV); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotV, wantV) {
		pretty, _ := json.MarshalIndent(gotV, "", "  ")
		t.Errorf("mesh config differs from Istio's\n got: %s\nwant: %s", pretty, want)
	}
}

// TestDefaultsDetails pins defaults whose JSON form is empty or that the
// reference cannot show, as documented for Istio's MeshConfig.
func TestDefaultsDetails(t *testing.T) {
	m := mesh.DefaultMeshConfig()
	checks := []struct {
		name string
		ok   bool
	}{
		{"accessLogEncoding TEXT", m.GetAccessLogEncoding() == meshconfig.MeshConfig_TEXT},
		{"inbound PASSTHROUGH", m.GetInboundTrafficPolicy().GetMode() == meshconfig.MeshConfig_InboundTrafficPolicy_PASSTHROUGH},
		{"no proxyMetadata", m.GetDefaultConfig().GetProxyMetadata() == nil},
		{"no trustDomainAliases", len(m.GetTrustDomainAliases()) == 0},
		{"dnsRefreshRate 60s", m.GetDnsRefreshRate().AsDuration() == time.Minute},
		{"serviceCluster", m.GetDefaultConfig().GetServiceCluster() == "istio-proxy"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("default %s does not hold", c.name)
		}
	}
	warn, err := validation.ValidateMeshConfig(m)
	if err != nil || warn != nil {
		t.Errorf("defaults must validate cleanly: warnings %v, error %v", warn, err)
	}
	if !proto.Equal(m, mesh.DefaultMeshConfig()) {
		t.Error("DefaultMeshConfig is not deterministic")
	}
	m.DefaultConfig.StatusPort = 1
	if mesh.DefaultMeshConfig().GetDefaultConfig().GetStatusPort() != 15020 {
		t.Error("DefaultMeshConfig returns shared objects")
	}
	if n := mesh.DefaultMeshNetworks(); n == nil || n.Networks == nil || len(n.Networks) != 0 {
		t.Errorf("DefaultMeshNetworks = %v, want an empty network map", n)
	}
}
