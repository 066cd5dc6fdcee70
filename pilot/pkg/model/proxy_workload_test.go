package model_test

import (
	"maps"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// A proxy's labels are the registry's over the agent's static labels, the
// metadata's when the registry has none (and always for a VM); the
// locality comes from the topology labels, else the node's; the topology
// labels are added; the proxy itself is not changed.
func TestWithWorkloadLabels(t *testing.T) {
	meta := &model.NodeMetadata{ClusterID: "c1", Network: "n1", NodeName: "node-a",
		Labels:       map[string]string{"app": "claimed", "quarantine": "true"},
		StaticLabels: map[string]string{"static": "s", "app": "static-app"}}
	p := &model.Proxy{Metadata: meta, Labels: meta.Labels}
	topo := func(l map[string]string, locality string) map[string]string {
		return model.AugmentLabels(l, "c1", locality, "node-a", "n1")
	}
	for _, c := range []struct {
		name         string
		proxy        *model.Proxy
		registry     map[string]string
		nodeLocality string
		want         map[string]string
		wantLocality string
	}{
		{"registry over static", p, map[string]string{"app": "pod", model.RegionLabel: "r", model.ZoneLabel: "z"}, "nr/nz/",
			topo(map[string]string{"app": "pod", "static": "s", model.RegionLabel: "r", model.ZoneLabel: "z"}, "r/z/"), "r/z/"},
		{"no registry: metadata", p, nil, "nr/nz/", topo(meta.Labels, "nr/nz/"), "nr/nz/"},
		{"locality label", p, map[string]string{"app": "pod", model.LocalityLabel: "lr.lz"}, "nr/nz/",
			topo(map[string]string{"app": "pod", "static": "s", model.LocalityLabel: "lr.lz"}, "lr/lz"), "lr/lz"},
		{"vm: metadata", &model.Proxy{Metadata: &model.NodeMetadata{Labels: map[string]string{model.TestVMLabel: "1", "app": "vm"}}},
			map[string]string{"app": "pod"}, "", map[string]string{model.TestVMLabel: "1", "app": "vm"}, ""},
	} {
		got := c.proxy.WithWorkloadLabels(c.registry, c.nodeLocality)
		if !maps.Equal(got.Labels, c.want) || got.Locality != c.wantLocality {
			t.Errorf("%s: labels %v locality %q, want %v %q", c.name, got.Labels, got.Locality, c.want, c.wantLocality)
		}
	}
	if p.Labels["app"] != "claimed" || len(p.Labels) != 2 {
		t.Errorf("the proxy was changed: %v", p.Labels)
	}
}
