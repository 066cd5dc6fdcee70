package kube_test

import (
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
)

// Several WorkloadEntries with the proxy's IP: as Istio's
// GetInstanceForProxy, the one the proxy's ID names
// ("<name>.<namespace>", its namespace), else the first of its namespace
// by name, else the first by namespace/name.
func TestProxyTargetsAmongEntriesOfOneIP(t *testing.T) {
	const ip = "10.1.0.9"
	entry := func(ns, name, app string) config.Config {
		return workloadEntry(ns, name, &networking.WorkloadEntry{Address: ip, Labels: map[string]string{"app": app}})
	}
	svc := func(ns, name, app, clusterIP string) *corev1.Service {
		return service(ns, name, clusterIP, map[string]string{"app": app},
			corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP})
	}
	f := newEntriesFixture(t, []config.Config{entry("ns1", "a-vm", "a"), entry("ns1", "b-vm", "b"), entry("ns2", "c-vm", "c")},
		svc("ns1", "svc-a", "a", "10.96.1.1"), svc("ns1", "svc-bb", "b", "10.96.1.2"), svc("ns2", "svc-ccc", "c", "10.96.1.3"))
	f.eventually("entries selected", func() bool { return len(f.endpoints("svc-ccc.ns2.svc.cluster.local", "ns2")) == 1 })

	for _, tc := range []struct {
		id, ns, want string
	}{
		{"b-vm.ns1", "ns1", "svc-bb.ns1"},  // named by the proxy's ID
		{"a-vm.ns1", "ns1", "svc-a.ns1"},   // named by the proxy's ID
		{"other.ns1", "ns1", "svc-a.ns1"},  // none named: the first of its namespace
		{"b-vm.ns2", "ns2", "svc-ccc.ns2"}, // no b-vm in ns2: the first of ns2
		{"b-vm", "ns1", "svc-a.ns1"},       // an ID without namespace names none
		{"b-vm.ns1.x", "ns1", "svc-a.ns1"}, // nor one of three parts
		{"b-vm.ns1", "ns3", "svc-a.ns1"},   // the ID's namespace is not the proxy's: the first of all
		{"c-vm.ns2", "ns2", "svc-ccc.ns2"}, // named
		{"", "", "svc-a.ns1"},              // nothing known: the first of all
	} {
		targets := f.reg.GetProxyServiceTargets(&model.ProxyQuery{ID: tc.id, IPAddresses: []string{ip}, Namespace: tc.ns})
		var got []string
		for _, tg := range targets {
			got = append(got, strings.TrimSuffix(tg.Service.Hostname, ".svc.cluster.local"))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("proxy %q of namespace %q: targets %v, want %s", tc.id, tc.ns, got, tc.want)
		}
	}
}
