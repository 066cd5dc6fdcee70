package cluster

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config/protocol"
)

func protocolOptions(t *testing.T, c *clusterv3.Cluster) *httpv3.HttpProtocolOptions {
	t.Helper()
	a := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
	if a == nil {
		return nil
	}
	var o httpv3.HttpProtocolOptions
	if err := a.UnmarshalTo(&o); err != nil {
		t.Fatal(err)
	}
	return &o
}

// Istio chooses a cluster's protocol from its port when it builds it, and
// applies the traffic policy after: a gRPC port's pool limits its HTTP/2
// streams without any upgrade; an explicit upgrade does not override a
// sniffed port's downstream protocol; useClientProtocol overrides the
// port's HTTP/2.
func TestClusterProtocolOrder(t *testing.T) {
	mesh := &meshconfig.MeshConfig{}
	pool := func(h *networking.ConnectionPoolSettings_HTTPSettings) *networking.TrafficPolicy {
		return &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{Http: h}}
	}

	c := &clusterv3.Cluster{}
	applyTrafficProtocol(c, pool(&networking.ConnectionPoolSettings_HTTPSettings{MaxConcurrentStreams: 10}), protocol.GRPC, mesh, true, true)
	if got := protocolOptions(t, c).GetExplicitHttpConfig().GetHttp2ProtocolOptions().GetMaxConcurrentStreams().GetValue(); got != 10 {
		t.Errorf("gRPC port: max concurrent streams %d, want 10", got)
	}

	c = &clusterv3.Cluster{}
	applyTrafficProtocol(c, pool(&networking.ConnectionPoolSettings_HTTPSettings{H2UpgradePolicy: networking.ConnectionPoolSettings_HTTPSettings_UPGRADE}),
		protocol.Unsupported, mesh, true, true)
	if protocolOptions(t, c).GetUseDownstreamProtocolConfig() == nil {
		t.Errorf("sniffed port with UPGRADE: %v, want the downstream's protocol", protocolOptions(t, c))
	}

	c = &clusterv3.Cluster{}
	applyTrafficProtocol(c, pool(&networking.ConnectionPoolSettings_HTTPSettings{UseClientProtocol: true}), protocol.GRPC, mesh, true, true)
	if protocolOptions(t, c).GetUseDownstreamProtocolConfig() == nil {
		t.Errorf("useClientProtocol on a gRPC port: %v", protocolOptions(t, c))
	}

	c = &clusterv3.Cluster{}
	applyTrafficProtocol(c, &networking.TrafficPolicy{}, protocol.TCP, mesh, true, true)
	if o := protocolOptions(t, c); o != nil {
		t.Errorf("TCP port without pool: HTTP options %v", o)
	}
}
