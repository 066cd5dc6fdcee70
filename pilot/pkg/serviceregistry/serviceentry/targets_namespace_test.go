package serviceentry_test

import (
	"slices"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// Several WorkloadEntries on one IP, of ServiceEntries of two namespaces:
// as in Istio, a proxy is a target of the services of its own namespace
// only (of all when it names none).
func TestProxyTargetsOfItsNamespace(t *testing.T) {
	sel := func(app string) *networking.WorkloadSelector {
		return &networking.WorkloadSelector{Labels: map[string]string{"app": app}}
	}
	entry := func(app string) *networking.WorkloadEntry {
		return &networking.WorkloadEntry{Address: "6.6.6.6", Labels: map[string]string{"app": app}}
	}
	f := newFixture(t,
		se("ns1", "one", &networking.ServiceEntry{Hosts: []string{"one.example"}, Ports: []*networking.ServicePort{httpPort(80)},
			WorkloadSelector: sel("one"), Resolution: networking.ServiceEntry_STATIC}),
		se("ns2", "two", &networking.ServiceEntry{Hosts: []string{"two.example"}, Ports: []*networking.ServicePort{httpPort(80)},
			WorkloadSelector: sel("two"), Resolution: networking.ServiceEntry_STATIC}),
		we("ns1", "vm-one", nil, entry("one")), we("ns2", "vm-two", nil, entry("two")))
	f.eventually("endpoints", func() bool {
		return len(f.endpoints("one.example", "ns1")) == 1 && len(f.endpoints("two.example", "ns2")) == 1
	})
	for ns, want := range map[string][]string{"ns1": {"one.example"}, "ns2": {"two.example"}, "": {"one.example", "two.example"}} {
		var got []string
		for _, tg := range f.reg.GetProxyServiceTargets(&model.ProxyQuery{IPAddresses: []string{"6.6.6.6"}, Namespace: ns}) {
			got = append(got, tg.Service.Hostname)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("proxy of namespace %q: targets %v, want %v", ns, got, want)
		}
	}
}
