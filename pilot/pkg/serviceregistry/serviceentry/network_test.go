package serviceentry_test

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/serviceentry"
)

// The network of a WorkloadEntry's endpoint, as Istio's ServiceEntry
// registry decides it: the entry's network field (or its group
// template's), never its topology.istio.io/network label; the label an
// entry without one gets is the field, else what NetworkFor (Istio's
// WithNetworkIDCb) says of its address, else none.
func TestWorkloadEntryNetwork(t *testing.T) {
	sel := &networking.WorkloadSelector{Labels: map[string]string{"app": "vm"}}
	objs := []struct {
		name, addr, network string
		labels              map[string]string
	}{
		{name: "field", addr: "10.1.0.1", network: "net-field"},
		{name: "label", addr: "10.1.0.2", labels: map[string]string{model.NetworkLabel: "net-label"}},
		{name: "none", addr: "192.168.0.9"},
	}
	build := func(opts serviceentry.Options) *fixture {
		f := newFixtureWith(t, opts, se("ns1", "vm", &networking.ServiceEntry{Hosts: []string{"vm.example"},
			Ports: []*networking.ServicePort{httpPort(80)}, WorkloadSelector: sel,
			Resolution: networking.ServiceEntry_STATIC, Location: networking.ServiceEntry_MESH_INTERNAL}))
		for _, o := range objs {
			labels := map[string]string{"app": "vm"}
			for k, v := range o.labels {
				labels[k] = v
			}
			f.create(we("ns1", o.name, nil, &networking.WorkloadEntry{Address: o.addr, Network: o.network, Labels: labels}))
		}
		f.eventually("endpoints", func() bool { return len(f.endpoints("vm.example", "ns1")) == len(objs) })
		return f
	}
	type want struct{ network, label string }
	check := func(t *testing.T, f *fixture, wants map[string]want) {
		t.Helper()
		for _, e := range f.endpoints("vm.example", "ns1") {
			w := wants[e.FirstAddress()]
			if e.Network != w.network || e.Labels[model.NetworkLabel] != w.label {
				t.Errorf("%s: network %q, label %q; want %q, %q", e.FirstAddress(), e.Network, e.Labels[model.NetworkLabel], w.network, w.label)
			}
		}
	}
	t.Run("no callback (Istio's config cluster)", func(t *testing.T) {
		check(t, build(serviceentry.Options{}), map[string]want{
			"10.1.0.1":    {"net-field", "net-field"},
			"10.1.0.2":    {"", "net-label"},
			"192.168.0.9": {"", ""},
		})
	})
	t.Run("NetworkFor", func(t *testing.T) {
		f := build(serviceentry.Options{NetworkFor: func(_ string, labels map[string]string) string {
			if nw := labels[model.NetworkLabel]; nw != "" {
				return nw
			}
			return "net-cidr"
		}})
		check(t, f, map[string]want{
			"10.1.0.1":    {"net-field", "net-field"},
			"10.1.0.2":    {"", "net-label"},
			"192.168.0.9": {"", "net-cidr"},
		})
	})
}
