package aggregate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/aggregate"
)

type fakeRegistry struct {
	provider model.ProviderID
	cluster  string
	services []*model.Service
	targets  []model.ServiceTarget
	synced   bool
}

func (f *fakeRegistry) Services() []*model.Service { return f.services }
func (f *fakeRegistry) GetService(h string) *model.Service {
	for _, s := range f.services {
		if s.Hostname == h {
			return s
		}
	}
	return nil
}
func (f *fakeRegistry) GetProxyServiceTargets(*model.ProxyQuery) []model.ServiceTarget {
	return f.targets
}
func (f *fakeRegistry) Provider() model.ProviderID { return f.provider }
func (f *fakeRegistry) Cluster() string            { return f.cluster }
func (f *fakeRegistry) HasSynced() bool            { return f.synced }

func svc(reg model.ProviderID, host, ns, object string, created time.Time, vips ...string) *model.Service {
	s := &model.Service{Hostname: host, CreationTime: created, Attributes: model.ServiceAttributes{
		ServiceRegistry: reg, Namespace: ns, Name: host, K8sAttributes: model.K8sAttributes{ObjectName: object}}}
	if len(vips) > 0 {
		s.ClusterVIPs = model.AddressMap{Addresses: map[string][]string{vips[0]: vips[1:]}}
	}
	return s
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestKubernetesFirstAndConflicts(t *testing.T) {
	const h = "reviews.bookinfo.svc.cluster.local"
	kube := &fakeRegistry{provider: model.Kubernetes, cluster: "c1", synced: true,
		services: []*model.Service{svc(model.Kubernetes, h, "bookinfo", "", t0.Add(time.Hour), "c1", "10.0.0.1")}}
	se := &fakeRegistry{provider: model.External, cluster: "c1", synced: true,
		services: []*model.Service{svc(model.External, h, "bookinfo", "clash", t0), svc(model.External, "x.example", "bookinfo", "x", t0)}}
	agg := aggregate.New(se, kube) // order fixed by provider

	if got := agg.GetService(h); got.Attributes.ServiceRegistry != model.Kubernetes {
		t.Fatalf("GetService: %v", got.Attributes.ServiceRegistry)
	}
	// the Kubernetes Service wins in its namespace although the entry is older
	if got := agg.GetServiceInNamespace(h, "bookinfo"); got.Attributes.ServiceRegistry != model.Kubernetes {
		t.Fatalf("GetServiceInNamespace: %v", got.Attributes.ServiceRegistry)
	}
	if n := len(agg.Services()); n != 3 {
		t.Fatalf("services: %d", n)
	}
	if n := len(agg.NamespaceServices("bookinfo")); n != 3 {
		t.Fatalf("namespace services: %d", n)
	}
	c := agg.Conflicts()
	if len(c) != 1 || c[0].Object != "ServiceEntry bookinfo/clash" || c[0].Subject != "host "+h {
		t.Fatalf("conflicts: %+v", c)
	}
}

func TestMultiClusterKubernetesServicesMerge(t *testing.T) {
	const h = "a.ns.svc.cluster.local"
	c1 := &fakeRegistry{provider: model.Kubernetes, cluster: "c1", services: []*model.Service{svc(model.Kubernetes, h, "ns", "", t0, "c1", "10.0.0.1")}}
	c2 := &fakeRegistry{provider: model.Kubernetes, cluster: "c2", services: []*model.Service{svc(model.Kubernetes, h, "ns", "", t0, "c2", "10.1.0.1")}}
	got := aggregate.New(c1, c2).Services()
	if len(got) != 1 || len(got[0].ClusterVIPs.Addresses) != 2 {
		t.Fatalf("merged: %+v", got)
	}
	if len(c1.services[0].ClusterVIPs.Addresses) != 1 {
		t.Fatal("the registry's service was modified")
	}
}

// A proxy's targets are those of every registry that knows it, as Istio
// joins them: the Kubernetes registries of its cluster only, the
// ServiceEntry registry whatever the cluster.
func TestProxyTargetsJoinRegistries(t *testing.T) {
	vm := model.ServiceTarget{Service: svc(model.External, "vm.example", "ns", "vm", t0)}
	k8s := model.ServiceTarget{Service: svc(model.Kubernetes, "vm.ns.svc.cluster.local", "ns", "vm", t0)}
	remote := model.ServiceTarget{Service: svc(model.Kubernetes, "vm.ns.svc.cluster.local", "ns", "vm", t0)}
	kube := &fakeRegistry{provider: model.Kubernetes, cluster: "c1", targets: []model.ServiceTarget{k8s}}
	kube2 := &fakeRegistry{provider: model.Kubernetes, cluster: "c2", targets: []model.ServiceTarget{remote}}
	se := &fakeRegistry{provider: model.External, cluster: "c1", targets: []model.ServiceTarget{vm}}
	agg := aggregate.New(kube, kube2, se)
	same := func(got []model.ServiceTarget, want ...model.ServiceTarget) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if got[i].Service != want[i].Service {
				return false
			}
		}
		return true
	}
	if got := agg.GetProxyServiceTargets(&model.ProxyQuery{ClusterID: "c1"}); !same(got, k8s, vm) {
		t.Fatalf("cluster c1: %d targets", len(got))
	}
	if got := agg.GetProxyServiceTargets(&model.ProxyQuery{ClusterID: "c2"}); !same(got, remote, vm) {
		t.Fatalf("cluster c2: %d targets", len(got))
	}
	if got := agg.GetProxyServiceTargets(&model.ProxyQuery{ClusterID: "other"}); !same(got, vm) {
		t.Fatalf("other cluster: %d targets", len(got))
	}
	if got := agg.GetProxyServiceTargets(&model.ProxyQuery{}); !same(got, k8s, remote, vm) {
		t.Fatalf("no cluster: %d targets", len(got))
	}
	if agg.HasSynced() {
		t.Fatal("unsynced registries")
	}
}

// A remote cluster's registry joins after the local one and before the
// ServiceEntry registry, and leaves with its cluster; a Service of both
// clusters is one service, by GetService as by Services, with the VIPs
// of each and the service accounts of both.
func TestRegistriesJoinAndLeave(t *testing.T) {
	const h = "a.ns.svc.cluster.local"
	withSA := func(s *model.Service, sas ...string) *model.Service {
		s.ServiceAccounts = sas
		return s
	}
	c1 := &fakeRegistry{provider: model.Kubernetes, cluster: "c1", synced: true,
		services: []*model.Service{withSA(svc(model.Kubernetes, h, "ns", "", t0, "c1", "10.0.0.1"), "spiffe://td1/ns/ns/sa/a")}}
	se := &fakeRegistry{provider: model.External, cluster: "c1", synced: true}
	agg := aggregate.New(c1, se)
	c2 := &fakeRegistry{provider: model.Kubernetes, cluster: "c2", synced: true,
		services: []*model.Service{withSA(svc(model.Kubernetes, h, "ns", "", t0, "c2", "10.1.0.1"), "spiffe://td2/ns/ns/sa/a", "spiffe://td1/ns/ns/sa/a")}}
	agg.AddRegistry(c2)
	regs := agg.Registries()
	if len(regs) != 3 || regs[0] != c1 || regs[1] != c2 || regs[2] != se {
		t.Fatalf("order: %v", regs)
	}
	for name, got := range map[string]*model.Service{"Services": agg.Services()[0], "GetService": agg.GetService(h)} {
		if v := got.ClusterVIPs.Addresses; len(v) != 2 || v["c1"][0] != "10.0.0.1" || v["c2"][0] != "10.1.0.1" {
			t.Errorf("%s: VIPs %v", name, v)
		}
		if sas := got.ServiceAccounts; len(sas) != 2 || sas[0] != "spiffe://td1/ns/ns/sa/a" || sas[1] != "spiffe://td2/ns/ns/sa/a" {
			t.Errorf("%s: service accounts %v", name, sas)
		}
	}
	if len(c1.services[0].ServiceAccounts) != 1 {
		t.Fatal("the registry's service was modified")
	}
	c2.synced = false
	if agg.HasSynced() {
		t.Fatal("an unsynced registry joined")
	}
	agg.DeleteRegistry(c2)
	if got := agg.GetService(h); len(got.ClusterVIPs.Addresses) != 1 || len(got.ServiceAccounts) != 1 {
		t.Fatalf("after the cluster left: %+v", got)
	}
	if !agg.HasSynced() || len(agg.Registries()) != 2 {
		t.Fatal("the registry did not leave")
	}
}

// Two clusters of 1,000 Services each, all present in both, and 100
// ServiceEntries: the join a push context build reads.
func BenchmarkServicesTwoClusters(b *testing.B) {
	regs := []aggregate.Registry{}
	for _, c := range []string{"c1", "c2"} {
		r := &fakeRegistry{provider: model.Kubernetes, cluster: c, synced: true}
		for i := range 1000 {
			s := svc(model.Kubernetes, fmt.Sprintf("s%d.ns%d.svc.cluster.local", i, i%20), fmt.Sprintf("ns%d", i%20), "", t0, c, fmt.Sprintf("10.%d.%d.%d", len(c), i/256, i%256))
			s.ServiceAccounts = []string{"spiffe://" + c + "/ns/x/sa/" + fmt.Sprint(i%7)}
			r.services = append(r.services, s)
		}
		regs = append(regs, r)
	}
	se := &fakeRegistry{provider: model.External, cluster: "c1", synced: true}
	for i := range 100 {
		se.services = append(se.services, svc(model.External, fmt.Sprintf("e%d.example.com", i), "ns0", fmt.Sprint(i), t0))
	}
	agg := aggregate.New(append(regs, se)...)
	b.ReportAllocs()
	for b.Loop() {
		if n := len(agg.Services()); n != 1100 {
			b.Fatal(n)
		}
	}
}
