package telemetry_test

import (
	"strings"
	"testing"

	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
)

func literals(tr *hcm.HttpConnectionManager_Tracing) map[string]string {
	out := map[string]string{}
	for _, t := range tr.GetCustomTags() {
		if l := t.GetLiteral(); l != nil {
			out[t.Tag] = l.Value
		}
	}
	return out
}

func TestTracing(t *testing.T) {
	if telemetry.Tracing(&meshconfig.MeshConfig{EnableTracing: false}, telemetry.Proxy{}) != nil {
		t.Error("tracing block although the mesh disables tracing")
	}
	m := &meshconfig.MeshConfig{EnableTracing: true, TrustDomain: "example.org"}
	tr := telemetry.Tracing(m, telemetry.Proxy{Namespace: "ns", ClusterID: "c1",
		Labels: map[string]string{"service.istio.io/canonical-name": "shop", "service.istio.io/canonical-revision": "v7"}})
	if err := tr.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"istio.canonical_revision": "v7", "istio.canonical_service": "shop", "istio.cluster_id": "c1",
		"istio.mesh_id": "example.org", "istio.namespace": "ns"}
	got := literals(tr)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(tr.CustomTags) != 9 || tr.CustomTags[0].Tag != "istio.authorization.dry_run.allow_policy.name" {
		t.Errorf("tags not sorted or missing: %v", tr.CustomTags)
	}
	if tr.RandomSampling.Value != 1 {
		t.Errorf("default sampling %v", tr.RandomSampling.Value)
	}
	// the mesh's proxy config sets sampling; the proxy's metadata the mesh ID
	m.DefaultConfig = &meshconfig.ProxyConfig{Tracing: &meshconfig.Tracing{Sampling: 25}, MeshId: "from-proxy-config"}
	tr = telemetry.Tracing(m, telemetry.Proxy{MeshID: "from-metadata"})
	if tr.RandomSampling.Value != 25 || literals(tr)["istio.mesh_id"] != "from-metadata" || literals(tr)["istio.canonical_service"] != "unknown" {
		t.Errorf("sampling %v tags %v", tr.RandomSampling.Value, literals(tr))
	}
}

// Istio's own filter configs render to JSON (the ALPN type is registered
// through istio.io/api), so config dumps can show them.
func TestIstioFiltersRender(t *testing.T) {
	for name, a := range map[string]*anypb.Any{"alpn": telemetry.ALPN(), "mx": telemetry.MetadataExchange(),
		"peer": telemetry.HTTPPeerMetadata(telemetry.Inbound), "grpc": telemetry.GRPCStats()} {
		b, err := protojson.Marshal(a)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if name == "peer" && !strings.Contains(string(b), "downstream_discovery") {
			t.Errorf("inbound peer metadata: %s", b)
		}
	}
}
