package model_test

import (
	"slices"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// Istio's GetAddressForProxy and GetExtraAddressesForProxy (without
// auto-allocated addresses): a Kubernetes service's VIPs in the proxy's
// cluster, of the proxy's IP families, else its default address; a
// ServiceEntry's addresses are never per-cluster VIPs there.
func TestAddressesForProxy(t *testing.T) {
	kube := &model.Service{Hostname: "web.app.svc.cluster.local", DefaultAddress: "10.96.0.1",
		ClusterVIPs: model.AddressMap{Addresses: map[string][]string{"c1": {"10.96.0.1", "fd00:96::1"}, "c2": {"10.97.0.1"}}},
		Attributes:  model.ServiceAttributes{ServiceRegistry: model.Kubernetes}}
	se := &model.Service{Hostname: "api.example.com", DefaultAddress: "10.0.0.1",
		ClusterVIPs: model.AddressMap{Addresses: map[string][]string{"c1": {"10.0.0.1", "2001:db8::1"}}},
		Attributes:  model.ServiceAttributes{ServiceRegistry: model.External}}
	cases := []struct {
		name    string
		svc     *model.Service
		cluster string
		mode    model.IPMode
		want    []string
	}{
		{"dual-stack proxy", kube, "c1", model.Dual, []string{"10.96.0.1", "fd00:96::1"}},
		{"IPv4 proxy", kube, "c1", model.IPv4, []string{"10.96.0.1"}},
		{"IPv6 proxy", kube, "c1", model.IPv6, []string{"fd00:96::1"}},
		{"other cluster", kube, "c2", model.Dual, []string{"10.97.0.1"}},
		{"IPv6 proxy, no VIP of its family", kube, "c2", model.IPv6, []string{"10.96.0.1"}},
		{"no cluster", kube, "", model.Dual, []string{"10.96.0.1"}},
		{"unknown cluster", kube, "c3", model.Dual, []string{"10.96.0.1"}},
		{"ServiceEntry", se, "c1", model.Dual, []string{"10.0.0.1"}},
	}
	for _, c := range cases {
		if got := c.svc.AddressesForProxy(c.cluster, c.mode); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}

	// a proxy capturing DNS takes the addresses allocated to a service
	// without one, of its families; a service with an address keeps it
	auto := &model.Service{Hostname: "ext.example.com", DefaultAddress: model.UnspecifiedIP,
		AutoAllocatedIPv4Address: "240.240.0.1", AutoAllocatedIPv6Address: "2001:2::1",
		Attributes: model.ServiceAttributes{ServiceRegistry: model.External}}
	for _, c := range []struct {
		name string
		svc  *model.Service
		mode model.IPMode
		auto bool
		want []string
	}{
		{"dual-stack proxy", auto, model.Dual, true, []string{"240.240.0.1", "2001:2::1"}},
		{"IPv4 proxy", auto, model.IPv4, true, []string{"240.240.0.1"}},
		{"IPv6 proxy", auto, model.IPv6, true, []string{"2001:2::1"}},
		{"no DNS capture", auto, model.Dual, false, []string{model.UnspecifiedIP}},
		{"an address of its own", se, model.Dual, true, []string{"10.0.0.1"}},
	} {
		if got := c.svc.ProxyAddresses("c1", c.mode, c.auto); !slices.Equal(got, c.want) {
			t.Errorf("allocated, %s: %v, want %v", c.name, got, c.want)
		}
	}
}
