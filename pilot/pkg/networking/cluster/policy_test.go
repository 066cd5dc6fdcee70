package cluster_test

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

func simple(lb networking.LoadBalancerSettings_SimpleLB) *networking.LoadBalancerSettings {
	return &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: lb}}
}

func TestMergeTrafficPolicy(t *testing.T) {
	root := &networking.TrafficPolicy{
		LoadBalancer: simple(networking.LoadBalancerSettings_LEAST_REQUEST),
		Tls:          &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL},
		PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{
			Port:         &networking.PortSelector{Number: 8080},
			LoadBalancer: simple(networking.LoadBalancerSettings_RANDOM),
		}},
	}
	subset := &networking.TrafficPolicy{LoadBalancer: simple(networking.LoadBalancerSettings_ROUND_ROBIN)}
	got := cluster.MergeTrafficPolicy(root, subset, 9080)
	if got.GetLoadBalancer().GetSimple() != networking.LoadBalancerSettings_ROUND_ROBIN || got.GetTls().GetMode() != networking.ClientTLSSettings_ISTIO_MUTUAL {
		t.Errorf("subset merge: %v", got)
	}
	if got := cluster.MergeTrafficPolicy(root, nil, 8080); got.GetLoadBalancer().GetSimple() != networking.LoadBalancerSettings_RANDOM {
		t.Errorf("port-level override: %v", got)
	}
	if root.GetLoadBalancer().GetSimple() != networking.LoadBalancerSettings_LEAST_REQUEST || len(root.PortLevelSettings) != 1 {
		t.Error("input modified")
	}
}

func build(t *testing.T, svc *model.Service, tp *networking.TrafficPolicy) *clusterv3.Cluster {
	t.Helper()
	dr := &config.Config{Meta: config.Meta{GroupVersionKind: gvk.DestinationRule, Name: "dr", Namespace: "ns"},
		Spec: &networking.DestinationRule{Host: svc.Hostname, TrafficPolicy: tp}}
	cs := cluster.BuildOutbound(svc, cluster.Options{Mesh: mesh.DefaultMeshConfig(), DestinationRule: dr})
	if len(cs) != 1 {
		t.Fatalf("%d clusters", len(cs))
	}
	if err := cs[0].ValidateAll(); err != nil {
		t.Fatalf("invalid cluster: %v", err)
	}
	return cs[0]
}

func upstreamTLS(t *testing.T, c *clusterv3.Cluster) *tlsv3.UpstreamTlsContext {
	t.Helper()
	if c.TransportSocket == nil {
		return nil
	}
	ctx := &tlsv3.UpstreamTlsContext{}
	if err := c.TransportSocket.GetTypedConfig().UnmarshalTo(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx
}

func TestTrafficPolicyTranslation(t *testing.T) {
	svc := service("a", "ns", 8080, protocol.GRPC, model.ClientSideLB)
	c := build(t, svc, &networking.TrafficPolicy{
		LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{
			ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_HttpHeaderName{HttpHeaderName: "x-user"}}}},
		ConnectionPool: &networking.ConnectionPoolSettings{
			Tcp:  &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 10, ConnectTimeout: durationpb.New(3e9)},
			Http: &networking.ConnectionPoolSettings_HTTPSettings{Http2MaxRequests: 50, MaxRetries: 3},
		},
		OutlierDetection: &networking.OutlierDetection{ConsecutiveGatewayErrors: wrapperspb.UInt32(5), MaxEjectionPercent: 20},
	})
	if c.LbPolicy != clusterv3.Cluster_RING_HASH || c.GetRingHashLbConfig().GetMinimumRingSize().GetValue() != 1024 {
		t.Errorf("lb %v %v", c.LbPolicy, c.GetRingHashLbConfig())
	}
	th := c.CircuitBreakers.Thresholds[0]
	if th.MaxConnections.Value != 10 || th.MaxRequests.Value != 50 || th.MaxRetries.Value != 3 || c.ConnectTimeout.AsDuration().Seconds() != 3 {
		t.Errorf("pool %v timeout %v", th, c.ConnectTimeout)
	}
	if c.TypedExtensionProtocolOptions["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"] == nil {
		t.Error("gRPC port without HTTP/2 upstream options")
	}
	if od := c.OutlierDetection; od.ConsecutiveGatewayFailure.Value != 5 || od.EnforcingConsecutiveGatewayFailure.Value != 100 || od.MaxEjectionPercent.Value != 20 {
		t.Errorf("outlier %v", od)
	}

	cases := []struct {
		name  string
		tls   *networking.ClientTLSSettings
		check func(*tlsv3.UpstreamTlsContext, *clusterv3.Cluster) bool
	}{
		{"disable", &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_DISABLE},
			func(ctx *tlsv3.UpstreamTlsContext, c *clusterv3.Cluster) bool {
				return ctx == nil && c.TransportSocketMatches == nil
			}},
		{"istio mutual", &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL},
			func(ctx *tlsv3.UpstreamTlsContext, _ *clusterv3.Cluster) bool {
				return ctx.Sni == "outbound_.8080_._.a.ns.svc.cluster.local" && ctx.CommonTlsContext.TlsCertificateSdsSecretConfigs[0].Name == "default"
			}},
		// a sidecar gets no TLS from a rule without a selector that names
		// a Secret, as in Istio (see tls_test.go for the others)
		{"simple with credential", &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE, CredentialName: "cred", Sni: "a.example.com"},
			func(ctx *tlsv3.UpstreamTlsContext, _ *clusterv3.Cluster) bool { return ctx == nil }},
		{"mutual with files", &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_MUTUAL, ClientCertificate: "/c.pem", PrivateKey: "/k.pem", CaCertificates: "/ca.pem"},
			func(ctx *tlsv3.UpstreamTlsContext, _ *clusterv3.Cluster) bool {
				return ctx.CommonTlsContext.TlsCertificateSdsSecretConfigs[0].Name == "file-cert:/c.pem~/k.pem" &&
					ctx.CommonTlsContext.GetCombinedValidationContext().GetValidationContextSdsSecretConfig().GetName() == "file-root:/ca.pem"
			}},
	}
	for _, tc := range cases {
		c := build(t, svc, &networking.TrafficPolicy{Tls: tc.tls})
		if !tc.check(upstreamTLS(t, c), c) {
			t.Errorf("%s: transport socket %v matches %v", tc.name, c.TransportSocket, c.TransportSocketMatches)
		}
	}
}

func TestResolutions(t *testing.T) {
	dns := service("ext", "ns", 443, protocol.TLS, model.DNSLB)
	dns.Hostname = "www.example.com"
	dns.MeshExternal = true
	c := build(t, dns, nil)
	if c.GetType() != clusterv3.Cluster_STRICT_DNS || c.LoadAssignment.Endpoints[0].LbEndpoints[0].GetEndpoint().GetAddress().GetSocketAddress().GetAddress() != "www.example.com" {
		t.Errorf("DNS cluster %v", c)
	}
	if c.TransportSocketMatches != nil {
		t.Error("mesh-external service got auto mTLS")
	}
	pt := build(t, service("pt", "ns", 80, protocol.TCP, model.Passthrough), nil)
	if pt.GetType() != clusterv3.Cluster_ORIGINAL_DST || pt.LbPolicy != clusterv3.Cluster_CLUSTER_PROVIDED {
		t.Errorf("passthrough cluster %v", pt)
	}
	udp := service("u", "ns", 53, protocol.UDP, model.ClientSideLB)
	if cs := cluster.BuildOutbound(udp, cluster.Options{Mesh: mesh.DefaultMeshConfig()}); len(cs) != 0 {
		t.Errorf("UDP port got clusters: %v", cs)
	}
}

func TestLocalityDistributeSetsWeightedLocalities(t *testing.T) {
	svc := service("a", "ns", 8080, protocol.HTTP, model.ClientSideLB)
	c := build(t, svc, &networking.TrafficPolicy{LoadBalancer: &networking.LoadBalancerSettings{
		LocalityLbSetting: &networking.LocalityLoadBalancerSetting{Distribute: []*networking.LocalityLoadBalancerSetting_Distribute{
			{From: "r/*", To: map[string]uint32{"r/*": 100}}}}}})
	if c.GetCommonLbConfig().GetLocalityWeightedLbConfig() == nil {
		t.Error("distribute without locality-weighted load balancing")
	}
	plain := build(t, svc, nil)
	if plain.GetCommonLbConfig().GetLocalityWeightedLbConfig() != nil {
		t.Error("locality weights without a distribute rule")
	}
}

// Auto mTLS sends plain text to a destination whose mesh- or
// namespace-wide PeerAuthentication is DISABLE; a DestinationRule's TLS
// setting still wins.
func TestAutoMTLSFollowsDestinationPeerAuthentication(t *testing.T) {
	svc := service("a", "ns", 8080, protocol.HTTP, model.ClientSideLB)
	m := mesh.DefaultMeshConfig()
	on := cluster.BuildOutbound(svc, cluster.Options{Mesh: m})[0]
	if len(on.TransportSocketMatches) != 2 {
		t.Fatalf("auto mTLS matches %v", on.TransportSocketMatches)
	}
	off := cluster.BuildOutbound(svc, cluster.Options{Mesh: m, PeerDisabled: true})[0]
	if off.TransportSocketMatches != nil || off.TransportSocket != nil {
		t.Errorf("destination under DISABLE got TLS: %v %v", off.TransportSocketMatches, off.TransportSocket)
	}
	dr := &config.Config{Spec: &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{
		Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL}}}}
	if c := cluster.BuildOutbound(svc, cluster.Options{Mesh: m, PeerDisabled: true, DestinationRule: dr})[0]; c.TransportSocket == nil {
		t.Error("a DestinationRule ISTIO_MUTUAL lost to the destination's DISABLE")
	}
}

// Port-level settings replace the policy wholesale: what they leave out is
// the default, not the top-level value (Istio's documented and implemented
// rule); a subset's top-level fields replace one by one, a subset's
// port-level settings wholesale again.
func TestMergeTrafficPolicyPortLevel(t *testing.T) {
	lb := func(s networking.LoadBalancerSettings_SimpleLB) *networking.LoadBalancerSettings {
		return &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: s}}
	}
	pool := func(n int32) *networking.ConnectionPoolSettings {
		return &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: n}}
	}
	root := &networking.TrafficPolicy{LoadBalancer: lb(networking.LoadBalancerSettings_RANDOM), ConnectionPool: pool(10),
		PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 9080}, ConnectionPool: pool(20)}}}
	// the rule's port settings: the pool, and no load balancer (default)
	if got := cluster.MergeTrafficPolicy(root, nil, 9080); got.GetConnectionPool().GetTcp().GetMaxConnections() != 20 || got.GetLoadBalancer() != nil {
		t.Errorf("port 9080: %v", got)
	}
	// another port: the rule's policy
	if got := cluster.MergeTrafficPolicy(root, nil, 80); got.GetConnectionPool().GetTcp().GetMaxConnections() != 10 || got.GetLoadBalancer() == nil || len(got.PortLevelSettings) != 0 {
		t.Errorf("port 80: %v", got)
	}
	// a subset's own field replaces that field only
	sub := &networking.TrafficPolicy{LoadBalancer: lb(networking.LoadBalancerSettings_ROUND_ROBIN)}
	if got := cluster.MergeTrafficPolicy(root, sub, 80); got.GetLoadBalancer().GetSimple() != networking.LoadBalancerSettings_ROUND_ROBIN ||
		got.GetConnectionPool().GetTcp().GetMaxConnections() != 10 {
		t.Errorf("subset on 80: %v", got)
	}
	// a subset's port settings replace everything
	subPort := &networking.TrafficPolicy{PortLevelSettings: []*networking.TrafficPolicy_PortTrafficPolicy{{Port: &networking.PortSelector{Number: 9080},
		LoadBalancer: lb(networking.LoadBalancerSettings_LEAST_REQUEST)}}}
	if got := cluster.MergeTrafficPolicy(root, subPort, 9080); got.GetLoadBalancer().GetSimple() != networking.LoadBalancerSettings_LEAST_REQUEST ||
		got.GetConnectionPool() != nil {
		t.Errorf("subset port settings on 9080: %v", got)
	}
	if len(root.PortLevelSettings) != 1 || root.ConnectionPool.Tcp.MaxConnections != 10 {
		t.Error("input modified")
	}
}
