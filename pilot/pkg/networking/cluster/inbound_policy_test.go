package cluster_test

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// An inbound cluster names the DestinationRule of its service only when
// the rule has a traffic policy (Istio's buildInboundClusterForPortOrUDS):
// a rule of subsets alone leaves it as without a rule.
func TestInboundPolicyNamesRuleWithTrafficPolicy(t *testing.T) {
	m := mesh.DefaultMeshConfig()
	svc := service("web", "app", 8080, protocol.HTTP, model.ClientSideLB)
	rule := func(spec *networking.DestinationRule) *config.Config {
		return &config.Config{Meta: config.Meta{GroupVersionKind: gvk.DestinationRule, Name: "web", Namespace: "app"}, Spec: spec}
	}
	named := func(dr *config.Config) bool {
		c := cluster.BuildInbound(8080, protocol.HTTP, []*model.Service{svc}, m)
		cluster.ApplyInboundPolicy(c, dr, 8080, protocol.HTTP, m)
		_, ok := c.GetMetadata().GetFilterMetadata()["istio"].GetFields()["config"]
		return ok
	}
	subsets := rule(&networking.DestinationRule{Host: "web", Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"v": "1"}}}})
	if named(subsets) {
		t.Error("a rule without a traffic policy is named in the inbound cluster's metadata")
	}
	withPolicy := rule(&networking.DestinationRule{Host: "web", TrafficPolicy: &networking.TrafficPolicy{
		ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 7}}}})
	if !named(withPolicy) {
		t.Error("a rule with a traffic policy is not named")
	}
	if named(nil) {
		t.Error("no rule, yet one is named")
	}
}
