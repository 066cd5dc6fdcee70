package cluster_test

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

func bindOf(c *clusterv3.Cluster) (string, []string) {
	var extra []string
	for _, e := range c.GetUpstreamBindConfig().GetExtraSourceAddresses() {
		extra = append(extra, e.GetAddress().GetAddress())
	}
	return c.GetUpstreamBindConfig().GetSourceAddress().GetAddress(), extra
}

// TestInboundSourceAddresses: the source addresses of inbound and inbound
// passthrough clusters by IP mode and ISTIO_DUAL_STACK, as Istio's
// buildInboundCluster (passThroughBindIPs) and
// buildInboundPassthroughCluster (the proxy's families, whatever the flag)
// set them.
func TestInboundSourceAddresses(t *testing.T) {
	m := mesh.DefaultMeshConfig()
	for _, c := range []struct {
		mode               model.IPMode
		dualStack          bool
		inbound, pass      string
		inExtra, passExtra int
	}{
		{model.IPv4, false, "127.0.0.6", "127.0.0.6", 0, 0},
		{model.IPv4, true, "127.0.0.6", "127.0.0.6", 0, 0},
		{model.IPv6, false, "::6", "::6", 0, 0},
		{model.IPv6, true, "::6", "::6", 0, 0},
		{model.Dual, false, "127.0.0.6", "127.0.0.6", 0, 1},
		{model.Dual, true, "127.0.0.6", "127.0.0.6", 1, 1},
	} {
		in := cluster.BuildInbound(9080, protocol.HTTP, nil, m)
		cluster.ApplyInboundFamily(in, c.mode, c.dualStack)
		pass := cluster.BuildInboundPassthrough(m)
		cluster.ApplyInboundPassthroughFamily(pass, c.mode)
		src, extra := bindOf(in)
		if src != c.inbound || len(extra) != c.inExtra || (len(extra) == 1 && extra[0] != "::6") {
			t.Errorf("%v dual-stack %v: inbound cluster from %s %v", c.mode, c.dualStack, src, extra)
		}
		src, extra = bindOf(pass)
		if src != c.pass || len(extra) != c.passExtra || (len(extra) == 1 && extra[0] != "::6") {
			t.Errorf("%v dual-stack %v: inbound passthrough from %s %v", c.mode, c.dualStack, src, extra)
		}
	}
	// an inbound cluster to a loopback endpoint has no source address to set
	in := cluster.BuildInbound(9080, protocol.HTTP, nil, m)
	cluster.ApplyInboundEndpoint(in, "127.0.0.1", 8080)
	cluster.ApplyInboundFamily(in, model.IPv6, true)
	if in.UpstreamBindConfig != nil {
		t.Errorf("loopback endpoint: %v", in.UpstreamBindConfig)
	}
}

// TestDNSLookupFamily: DNS clusters resolve the proxy's families, as
// Istio's SelectDNSLookupFamily picks them.
func TestDNSLookupFamily(t *testing.T) {
	svc := &model.Service{Hostname: "cache.example.com", DefaultAddress: "10.96.0.4", Resolution: model.DNSLB,
		Ports: []*model.Port{{Name: "tcp", Port: 6379, Protocol: protocol.TCP}}, Attributes: model.ServiceAttributes{Name: "cache", Namespace: "ns"}}
	for _, c := range []struct {
		mode                   model.IPMode
		dualStack, ipv4ForIPv6 bool
		want                   clusterv3.Cluster_DnsLookupFamily
	}{
		{model.IPv4, true, true, clusterv3.Cluster_V4_ONLY},
		{model.IPv6, false, false, clusterv3.Cluster_V6_ONLY},
		{model.IPv6, true, false, clusterv3.Cluster_V6_ONLY},
		{model.IPv6, false, true, clusterv3.Cluster_ALL},
		{model.Dual, false, true, clusterv3.Cluster_V4_ONLY},
		{model.Dual, true, false, clusterv3.Cluster_ALL},
	} {
		cs := cluster.BuildOutbound(svc, cluster.Options{Mesh: mesh.DefaultMeshConfig(), IPMode: c.mode, DualStack: c.dualStack, IPv4ForIPv6: c.ipv4ForIPv6})
		if len(cs) != 1 || cs[0].DnsLookupFamily != c.want {
			t.Errorf("%v dual-stack %v ipv4-for-ipv6 %v: %v, want %v", c.mode, c.dualStack, c.ipv4ForIPv6, cs[0].DnsLookupFamily, c.want)
		}
	}
}
