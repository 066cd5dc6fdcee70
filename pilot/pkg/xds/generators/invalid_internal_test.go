package xds

import (
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	dto "github.com/prometheus/client_model/go"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// A resource that fails validation is dropped, counted and listed as a
// problem until the same snapshot generates it valid, or a new snapshot
// starts over; the valid resources around it are sent.
func TestInvalidResourcesAreReported(t *testing.T) {
	inv := &InvalidResources{}
	push := model.NewPushContext()
	before := invalidCount(t)
	bad := &clusterv3.Cluster{Name: "outbound|80||a.ns.svc.cluster.local", ConnectTimeout: nil,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS}, LbPolicy: clusterv3.Cluster_LbPolicy(99)}
	good := &clusterv3.Cluster{Name: "outbound|80||b.ns.svc.cluster.local"}
	out := toResources(inv, push, ClusterType, []*clusterv3.Cluster{bad, good}, func(c *clusterv3.Cluster) string { return c.Name })
	if len(out) != 1 || out[0].Name != good.Name {
		t.Fatalf("sent %v", out)
	}
	if got := invalidCount(t) - before; got != 1 {
		t.Errorf("pilot_xds_invalid_resources{type=cds} grew by %v", got)
	}
	ps := inv.Problems()
	if len(ps) != 1 || ps[0].Subject != "cds "+bad.Name || !strings.Contains(ps[0].Message, "LbPolicy") {
		t.Fatalf("problems %+v", ps)
	}
	// fixed within the same snapshot
	bad.LbPolicy = clusterv3.Cluster_ROUND_ROBIN
	toResources(inv, push, ClusterType, []*clusterv3.Cluster{bad}, func(c *clusterv3.Cluster) string { return c.Name })
	if ps := inv.Problems(); len(ps) != 0 {
		t.Errorf("still listed after a valid generation: %+v", ps)
	}
	// a new snapshot forgets the old one's drops
	bad.LbPolicy = clusterv3.Cluster_LbPolicy(99)
	toResources(inv, push, ClusterType, []*clusterv3.Cluster{bad}, func(c *clusterv3.Cluster) string { return c.Name })
	newer := model.NewPushContext()
	toResources(inv, newer, ClusterType, []*clusterv3.Cluster{good}, func(c *clusterv3.Cluster) string { return c.Name })
	if ps := inv.Problems(); len(ps) != 0 {
		t.Errorf("old snapshot's drop still listed: %+v", ps)
	}
	// and what the newer one drops stays, whatever the older one still does
	toResources(inv, newer, ClusterType, []*clusterv3.Cluster{bad}, func(c *clusterv3.Cluster) string { return c.Name })
	bad.LbPolicy = clusterv3.Cluster_ROUND_ROBIN
	toResources(inv, push, ClusterType, []*clusterv3.Cluster{bad}, func(c *clusterv3.Cluster) string { return c.Name })
	if ps := inv.Problems(); len(ps) != 1 {
		t.Errorf("a late generation from the older snapshot changed the list: %+v", ps)
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
