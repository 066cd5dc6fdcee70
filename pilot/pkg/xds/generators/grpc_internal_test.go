package generators

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
)

// Load-balancing settings of proxyless clusters, as Istio sends them
// (TestGRPCConfigMatchesIstio covers LEAST_REQUEST and ROUND_ROBIN against
// Istio's answer).
func TestGRPCLoadBalancer(t *testing.T) {
	ringHash := func(n uint64) *clusterv3.Cluster {
		return &clusterv3.Cluster{LbPolicy: clusterv3.Cluster_RING_HASH,
			LbConfig: &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{MinimumRingSize: wrapperspb.UInt64(n)}}}
	}
	simple := func(s networking.LoadBalancerSettings_SimpleLB) *networking.LoadBalancerSettings {
		return &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: s}}
	}
	hash := func(ch *networking.LoadBalancerSettings_ConsistentHashLB) *networking.LoadBalancerSettings {
		return &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{ConsistentHash: ch}}
	}
	for _, tc := range []struct {
		name string
		lb   *networking.LoadBalancerSettings
		want *clusterv3.Cluster
	}{
		{"unset is round robin", nil, &clusterv3.Cluster{}},
		{"round robin", simple(networking.LoadBalancerSettings_ROUND_ROBIN), &clusterv3.Cluster{}},
		{"random is not implemented by grpc", simple(networking.LoadBalancerSettings_RANDOM), &clusterv3.Cluster{}},
		{"least request", simple(networking.LoadBalancerSettings_LEAST_REQUEST), &clusterv3.Cluster{LbPolicy: clusterv3.Cluster_LEAST_REQUEST}},
		{"consistent hash defaults to a 1024 ring", hash(&networking.LoadBalancerSettings_ConsistentHashLB{
			HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}}), ringHash(1024)},
		{"deprecated minimum ring size", hash(&networking.LoadBalancerSettings_ConsistentHashLB{MinimumRingSize: 64}), ringHash(64)}, //nolint:staticcheck // the deprecated field is still honoured
		{"ring hash", hash(&networking.LoadBalancerSettings_ConsistentHashLB{HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash_{
			RingHash: &networking.LoadBalancerSettings_ConsistentHashLB_RingHash{MinimumRingSize: 128}}}), ringHash(128)},
		{"maglev, which grpc-go lacks, becomes a ring hash", hash(&networking.LoadBalancerSettings_ConsistentHashLB{HashAlgorithm: &networking.LoadBalancerSettings_ConsistentHashLB_Maglev{
			Maglev: &networking.LoadBalancerSettings_ConsistentHashLB_MagLev{TableSize: 65537}}}), ringHash(1024)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := &clusterv3.Cluster{}
			grpcLoadBalancer(got, tc.lb)
			if !proto.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
