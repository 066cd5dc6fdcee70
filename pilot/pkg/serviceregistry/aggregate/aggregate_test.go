package aggregate_test

import (
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

func TestProxyTargetsFirstAnswerWins(t *testing.T) {
	target := model.ServiceTarget{Service: svc(model.External, "vm.example", "ns", "vm", t0)}
	kube := &fakeRegistry{provider: model.Kubernetes, cluster: "c1"}
	se := &fakeRegistry{provider: model.External, cluster: "c1", targets: []model.ServiceTarget{target}}
	agg := aggregate.New(kube, se)
	if got := agg.GetProxyServiceTargets(&model.ProxyQuery{IPAddresses: []string{"1.1.1.1"}}); len(got) != 1 {
		t.Fatalf("targets: %+v", got)
	}
	if got := agg.GetProxyServiceTargets(&model.ProxyQuery{ClusterID: "other"}); got != nil {
		t.Fatalf("other cluster: %+v", got)
	}
	if agg.HasSynced() {
		t.Fatal("unsynced registries")
	}
}
