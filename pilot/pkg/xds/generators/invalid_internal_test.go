package generators

import (
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	dto "github.com/prometheus/client_model/go"

	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// A resource that fails validation is held (not sent, named with the
// reason) and counted; the valid resources around it are sent.
func TestInvalidResourcesAreHeld(t *testing.T) {
	before := invalidCount(t)
	bad := &clusterv3.Cluster{Name: "outbound|80||a.ns.svc.cluster.local", ConnectTimeout: nil,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS}, LbPolicy: clusterv3.Cluster_LbPolicy(99)}
	good := &clusterv3.Cluster{Name: "outbound|80||b.ns.svc.cluster.local"}
	out := toResources(xds.ClusterType, []*clusterv3.Cluster{bad, good}, func(c *clusterv3.Cluster) string { return c.Name })
	if len(out.Resources) != 1 || out.Resources[0].Name != good.Name {
		t.Fatalf("sent %v", out.Resources)
	}
	if len(out.Held) != 1 || out.Held[0].Name != bad.Name || !strings.Contains(out.Held[0].Reason, "LbPolicy") {
		t.Fatalf("held %+v", out.Held)
	}
	if got := invalidCount(t) - before; got != 1 {
		t.Errorf("pilot_xds_invalid_resources{type=cds} grew by %v", got)
	}
}

func invalidCount(t *testing.T) float64 {
	t.Helper()
	var m dto.Metric
	if err := metricInvalidResources.WithLabelValues("cds").Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
