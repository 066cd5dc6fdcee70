package generators_test

import (
	"fmt"
	"path/filepath"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

// A DestinationRule with a workloadSelector applies to the clients it
// selects only, and the rule without one to the others of the namespace,
// whichever connects first: clusters and load assignments are never shared
// between clients that use different rules.
func TestDestinationRuleWorkloadSelector(t *testing.T) {
	for _, order := range [][]string{{"canary", "web", "canary"}, {"web", "canary", "web"}} {
		t.Run(order[0]+"-first", func(t *testing.T) {
			s := serveFile(t, filepath.Join("testdata", "dr-selector.yaml"), nil, nil)
			for i, app := range order {
				c := xdstest.Dial(t, s, adsc.Config{Delta: true, NodeID: fmt.Sprintf("sidecar~10.1.2.%d~%s-%d.app~app.svc.cluster.local", i+1, app, i),
					Metadata: map[string]any{"NAMESPACE": "app", "LABELS": map[string]any{"app": app}}})
				if err := c.Watch(xds.ClusterType); err != nil {
					t.Fatal(err)
				}
				cds := xdstest.Next(t, c)
				main, _ := cds.Resources["outbound|8080||a.app.svc.cluster.local"].(*clusterv3.Cluster)
				_, hasV1 := cds.Resources["outbound|8080|v1|a.app.svc.cluster.local"]
				_, hasV2 := cds.Resources["outbound|8080|v2|a.app.svc.cluster.local"]
				wantLB, wantV1, wantV2 := clusterv3.Cluster_ROUND_ROBIN, true, false
				if app == "canary" {
					wantLB, wantV1, wantV2 = clusterv3.Cluster_LEAST_REQUEST, false, true
				}
				if main.GetLbPolicy() != wantLB || hasV1 != wantV1 || hasV2 != wantV2 {
					t.Errorf("client %d (%s): lb %v, v1 subset %v, v2 subset %v; want %v, %v, %v",
						i, app, main.GetLbPolicy(), hasV1, hasV2, wantLB, wantV1, wantV2)
				}
				const v2 = "outbound|8080|v2|a.app.svc.cluster.local"
				if err := c.Watch(xds.EndpointType, v2); err != nil {
					t.Fatal(err)
				}
				got := addresses(t, xdstest.Next(t, c), v2)
				if (len(got) == 1 && got[0] == "10.1.0.2") != (app == "canary") {
					t.Errorf("client %d (%s): %s endpoints %v", i, app, v2, got)
				}
			}
		})
	}
}
