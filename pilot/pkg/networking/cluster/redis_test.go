package cluster_test

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// With the Redis proxy on (PILOT_ENABLE_REDIS_FILTER), a Redis port's
// clusters balance by MAGLEV whatever the rule says, as Istio's
// applyLoadBalancer does; other ports, and Redis ports with the filter
// off, keep the rule's.
func TestRedisClustersUseMaglev(t *testing.T) {
	ringHash := &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_ConsistentHash{
		ConsistentHash: &networking.LoadBalancerSettings_ConsistentHashLB{HashKey: &networking.LoadBalancerSettings_ConsistentHashLB_UseSourceIp{UseSourceIp: true}}}}
	for _, tc := range []struct {
		proto protocol.Instance
		on    bool
		want  clusterv3.Cluster_LbPolicy
	}{
		{protocol.Redis, true, clusterv3.Cluster_MAGLEV},
		{protocol.Redis, false, clusterv3.Cluster_RING_HASH},
		{protocol.TCP, true, clusterv3.Cluster_RING_HASH},
	} {
		svc := service("cache", "ns", 6379, tc.proto, model.ClientSideLB)
		dr := &config.Config{Meta: config.Meta{GroupVersionKind: gvk.DestinationRule, Name: "dr", Namespace: "ns"},
			Spec: &networking.DestinationRule{Host: svc.Hostname, TrafficPolicy: &networking.TrafficPolicy{LoadBalancer: ringHash},
				Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"v": "1"}}}}}
		cs := cluster.BuildOutbound(svc, cluster.Options{Mesh: mesh.DefaultMeshConfig(), DestinationRule: dr, RedisMaglev: tc.on})
		if len(cs) != 2 {
			t.Fatalf("%d clusters", len(cs))
		}
		for _, c := range cs {
			if err := c.ValidateAll(); err != nil {
				t.Errorf("%s: invalid: %v", c.Name, err)
			}
			if c.LbPolicy != tc.want || (tc.want == clusterv3.Cluster_MAGLEV && c.LbConfig != nil) {
				t.Errorf("%s %s redis=%v: lb %v %v, want %v", c.Name, tc.proto, tc.on, c.LbPolicy, c.LbConfig, tc.want)
			}
		}
	}
}
