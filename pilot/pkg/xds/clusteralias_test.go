package xds_test

import (
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
)

// --clusterAliases: a proxy declaring an alias as its CLUSTER_ID is taken
// to run in the aliased cluster, as in Istio; other IDs are kept.
func TestClusterAliases(t *testing.T) {
	s := newServer(t, true)
	s.DS.SetClusterAliases(map[string]string{"old-name": "Kubernetes"})
	aliased := dial(t, s, adsc.Config{NodeID: "sidecar~10.0.0.1~app-1.default~default.svc.cluster.local",
		Metadata: map[string]any{"CLUSTER_ID": "old-name"}})
	other := dial(t, s, adsc.Config{NodeID: "sidecar~10.0.0.2~app-2.default~default.svc.cluster.local",
		Metadata: map[string]any{"CLUSTER_ID": "remote"}})
	for _, c := range []*adsc.Client{aliased, other} {
		if err := c.Watch(xds.ClusterType); err != nil {
			t.Fatal(err)
		}
		next(t, c)
	}
	got := map[string]string{}
	for _, c := range s.DS.Connections() {
		got[c.Proxy().ID] = c.Proxy().ClusterID()
	}
	if got["app-1.default"] != "Kubernetes" || got["app-2.default"] != "remote" {
		t.Errorf("cluster IDs %v", got)
	}
	if n := s.DS.ProxyUpdate("Kubernetes", "10.0.0.1"); n != 1 {
		t.Errorf("a workload of cluster Kubernetes queued %d connections of its aliased proxy, want 1", n)
	}
}
