package generators_test

import (
	"path/filepath"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

// Upstream TLS origination cases: DestinationRule SIMPLE and MUTUAL on a
// sidecar (under the mesh's tlsDefaults) and on an egress gateway, which
// reads a credentialName over SDS. See the case files.
var upstreamTLSCases = casesIn("upstream-tls")

// TestUpstreamTLSCasesValid runs Envoy's validation on every cluster and
// listener of the upstream TLS cases.
func TestUpstreamTLSCasesValid(t *testing.T) {
	for _, gc := range upstreamTLSCases {
		t.Run(gc.name, func(t *testing.T) { checkCaseValid(t, gc.name) })
	}
}

// TestUpstreamTLSFileCredentialSocket: a proxy whose agent runs its own
// file SDS server (file-credential node metadata) gets its files from
// sds-files-grpc, and a proxy without one, served after it from the same
// cache, still from sds-grpc.
func TestUpstreamTLSFileCredentialSocket(t *testing.T) {
	gc := upstreamTLSCases[0]
	s := serveFile(t, filepath.Join("testdata", gc.name+".yaml"), gc.mesh, nil)
	for _, tc := range []struct {
		meta    map[string]any
		cluster string
	}{
		{map[string]any{"file-credential": "true"}, "sds-files-grpc"},
		{nil, "sds-grpc"},
	} {
		md := map[string]any{"NAMESPACE": gc.ns, "LABELS": gc.labels}
		for k, v := range tc.meta {
			md[k] = v
		}
		c := xdstest.Dial(t, s, adsc.Config{NodeID: gc.nodeID, Metadata: md})
		if err := c.Watch(xds.ClusterType); err != nil {
			t.Fatal(err)
		}
		xdstest.Next(t, c)
		cl, ok := c.Resource(xds.ClusterType, "outbound|443||mtls.example.com").(*clusterv3.Cluster)
		if !ok {
			t.Fatal("no mtls.example.com cluster")
		}
		ctx := &tlsv3.UpstreamTlsContext{}
		if err := cl.GetTransportSocket().GetTypedConfig().UnmarshalTo(ctx); err != nil {
			t.Fatal(err)
		}
		for _, sds := range []*tlsv3.SdsSecretConfig{ctx.CommonTlsContext.TlsCertificateSdsSecretConfigs[0],
			ctx.CommonTlsContext.GetCombinedValidationContext().GetValidationContextSdsSecretConfig()} {
			if got := sds.GetSdsConfig().GetApiConfigSource().GetGrpcServices()[0].GetEnvoyGrpc().GetClusterName(); got != tc.cluster {
				t.Errorf("meta %v: %s from %s, want %s", tc.meta, sds.Name, got, tc.cluster)
			}
		}
	}
}
