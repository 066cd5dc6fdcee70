package serviceentry_test

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/serviceentry"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// The entries other registries select: valid, IP-addressed, healthy ones,
// with the registry's cluster and the NetworkFor label.
func TestWorkloadEntryInstances(t *testing.T) {
	sick := we("ns1", "sick", nil, &networking.WorkloadEntry{Address: "10.0.0.3", Labels: map[string]string{"app": "a"}})
	sick.Annotations = map[string]string{"proxy.istio.io/health-checks-enabled": "true"}
	f := newFixtureWith(t, serviceentry.Options{ClusterID: "remote",
		NetworkFor: func(ip string, _ map[string]string) string { return "net-" + ip }},
		we("ns1", "ok", map[string]string{"app": "a"}, &networking.WorkloadEntry{Address: "10.0.0.1", ServiceAccount: "sa"}),
		we("ns1", "dns", nil, &networking.WorkloadEntry{Address: "vm.example.com", Labels: map[string]string{"app": "a"}}),
		sick)
	col := f.reg.WorkloadEntryInstances()
	f.eventually("instances synced", col.HasSynced)
	list := col.List()
	if len(list) != 1 || list[0].Name != "ok" {
		t.Fatalf("instances: %+v", list)
	}
	e := list[0].Endpoint
	if e.Locality.ClusterID != "remote" || e.Labels[model.ClusterLabel] != "remote" || e.Labels[model.NetworkLabel] != "net-10.0.0.1" ||
		e.Network != "" || e.ServiceAccount != "spiffe://td.example/ns/ns1/sa/sa" || e.TLSMode != model.IstioMutualTLSModeLabel {
		t.Fatalf("endpoint: %+v", e)
	}
	sick.Status = healthStatus("True")
	f.update(sick)
	f.eventually("the entry healthy", func() bool { return len(col.List()) == 2 })
}

// A remote cluster's workloads join the ServiceEntries that select them,
// keeping their cluster, and leave when detached.
func TestExternalWorkloads(t *testing.T) {
	f := newFixture(t, se("ns1", "web", &networking.ServiceEntry{Hosts: []string{"web.example.com"},
		Ports: []*networking.ServicePort{httpPort(80)}, Resolution: networking.ServiceEntry_STATIC,
		WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "web"}}}))
	remote := krt.NewStaticCollection([]model.WorkloadInstance{
		{Name: "vm", Namespace: "ns1", Kind: model.WorkloadEntryKind, Labels: map[string]string{"app": "web"},
			Endpoint: &model.IstioEndpoint{Addresses: []string{"10.2.0.1"}, Locality: model.Locality{ClusterID: "remote"}},
			PortMap:  map[string]uint32{"http": 8080}},
		{Name: "other", Namespace: "ns2", Kind: model.WorkloadEntryKind, Labels: map[string]string{"app": "web"},
			Endpoint: &model.IstioEndpoint{Addresses: []string{"10.2.0.2"}}},
	})
	detach := f.reg.AddExternalWorkloads("remote", remote)
	f.eventually("the remote entry selected", func() bool {
		eps := f.endpoints("web.example.com", "ns1")
		return len(eps) == 1 && eps[0].FirstAddress() == "10.2.0.1" && eps[0].EndpointPort == 8080 &&
			eps[0].Locality.ClusterID == "remote"
	})
	remote.Delete("ns1/vm")
	f.eventually("the remote entry deleted", func() bool { return len(f.endpoints("web.example.com", "ns1")) == 0 })
	remote.Set(model.WorkloadInstance{Name: "vm2", Namespace: "ns1", Kind: model.WorkloadEntryKind, Labels: map[string]string{"app": "web"},
		Endpoint: &model.IstioEndpoint{Addresses: []string{"10.2.0.3"}}})
	f.eventually("a new remote entry", func() bool { return len(f.endpoints("web.example.com", "ns1")) == 1 })

	// new credentials: a new source for the cluster replaces the old one,
	// whose workloads it lacks are gone; detaching the old one then keeps
	// the new one's
	replacement := krt.NewStaticCollection([]model.WorkloadInstance{{Name: "vm3", Namespace: "ns1", Kind: model.WorkloadEntryKind,
		Labels: map[string]string{"app": "web"}, Endpoint: &model.IstioEndpoint{Addresses: []string{"10.2.0.4"}}}})
	detach2 := f.reg.AddExternalWorkloads("remote", replacement)
	only := func(addr string) func() bool {
		return func() bool {
			eps := f.endpoints("web.example.com", "ns1")
			return len(eps) == 1 && eps[0].FirstAddress() == addr
		}
	}
	f.eventually("the replacement's workloads", only("10.2.0.4"))
	detach()
	remote.Set(model.WorkloadInstance{Name: "late", Namespace: "ns1", Kind: model.WorkloadEntryKind, Labels: map[string]string{"app": "web"},
		Endpoint: &model.IstioEndpoint{Addresses: []string{"10.2.0.5"}}})
	f.eventually("the replacement's workloads kept", only("10.2.0.4"))
	detach2()
	f.eventually("the cluster detached", func() bool { return len(f.endpoints("web.example.com", "ns1")) == 0 })
}
