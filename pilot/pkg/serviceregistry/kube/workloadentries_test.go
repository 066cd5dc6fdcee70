package kube_test

import (
	"fmt"
	"strings"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	registry "github.com/meshplane/istiod/pilot/pkg/serviceregistry/kube"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/serviceentry"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube"
)

// entriesFixture is a kube registry whose Services select the
// WorkloadEntries of a ServiceEntry registry on an in-memory store.
type entriesFixture struct {
	*fixture
	store *memory.Store
}

func newEntriesFixture(t *testing.T, entries []config.Config, objs ...runtime.Object) *entriesFixture {
	t.Helper()
	f := &fixture{t: t, client: kube.NewFakeClient(objs...), rec: model.NewRecordingXDSUpdater(0),
		pushes: model.NewRecordingXDSUpdater(0), index: model.NewEndpointIndex(), board: diag.New(nil),
		stop: make(chan struct{})}
	t.Cleanup(func() { close(f.stop) })
	up := model.FanOut{f.rec, model.NewEndpointIndexUpdater(f.index, f.pushes)}
	reg, err := registry.NewController(f.client, registry.Options{XDSUpdater: up, Problems: f.board, Stop: f.stop})
	if err != nil {
		t.Fatal(err)
	}
	f.reg = reg
	store := memory.New(collections.Pilot)
	for _, c := range entries {
		if _, err := store.Create(c); err != nil {
			t.Fatal(err)
		}
	}
	se := serviceentry.NewController(store, serviceentry.Options{XDSUpdater: model.FanOut{}, Stop: f.stop})
	reg.SelectWorkloadEntries(se.WorkloadEntryInstances())
	f.client.Start(f.stop)
	f.eventually("synced", reg.HasSynced)
	return &entriesFixture{fixture: f, store: store}
}

func workloadEntry(ns, name string, we *networking.WorkloadEntry) config.Config {
	return config.Config{Meta: config.Meta{GroupVersionKind: gvk.WorkloadEntry, Namespace: ns, Name: name}, Spec: we}
}

// summary renders the endpoints as address:port/portname, sorted as sent.
func summary(eps []*model.IstioEndpoint) string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = fmt.Sprintf("%s:%d/%s", e.FirstAddress(), e.EndpointPort, e.ServicePortName)
	}
	return strings.Join(out, " ")
}

func (f *entriesFixture) waitEndpoints(want string) []*model.IstioEndpoint {
	f.t.Helper()
	var got string
	f.eventually("endpoints "+want, func() bool {
		got = summary(f.endpoints(host, "ns1"))
		return got == want
	})
	return f.endpoints(host, "ns1")
}

func TestServiceSelectsWorkloadEntries(t *testing.T) {
	svc := service("ns1", "reviews", "10.96.0.5", map[string]string{"app": "reviews"},
		corev1.ServicePort{Name: "http", Port: 9080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
		corev1.ServicePort{Name: "grpc", Port: 7070, TargetPort: intstr.FromString("grpc-port"), Protocol: corev1.ProtocolTCP},
		corev1.ServicePort{Name: "tcp", Port: 9000, Protocol: corev1.ProtocolTCP})
	vm1 := workloadEntry("ns1", "vm1", &networking.WorkloadEntry{Address: "10.1.0.1", Labels: map[string]string{"app": "reviews"},
		Ports: map[string]uint32{"http": 18080, "grpc-port": 17070}, ServiceAccount: "vm-sa", Network: "vmnet", Locality: "r1/z1", Weight: 3})
	vm2 := workloadEntry("ns1", "vm2", &networking.WorkloadEntry{Address: "10.1.0.2", Labels: map[string]string{"app": "reviews"}})
	other := workloadEntry("ns2", "vm3", &networking.WorkloadEntry{Address: "10.1.0.3", Labels: map[string]string{"app": "reviews"}})
	sick := workloadEntry("ns1", "vm4", &networking.WorkloadEntry{Address: "10.1.0.4", Labels: map[string]string{"app": "reviews"}})
	sick.Annotations = map[string]string{"proxy.istio.io/health-checks-enabled": "true"}
	dns := workloadEntry("ns1", "vm5", &networking.WorkloadEntry{Address: "vm5.example.com", Labels: map[string]string{"app": "reviews"}})
	f := newEntriesFixture(t, []config.Config{vm1, vm2, other, sick, dns},
		pod("ns1", "reviews-1", "10.0.0.1", map[string]string{"app": "reviews"}), svc,
		slice("ns1", "reviews-1", "reviews", []discoveryv1.EndpointPort{slicePort("http", 8080)}, ep{addr: "10.0.0.1", pod: "reviews-1"}))

	// the slice's endpoints, then per service port the entries: a numeric
	// targetPort maps through the entry's port named like the service
	// port, a named one through that name (vm2 lacks it), none is the port
	eps := f.waitEndpoints("10.0.0.1:8080/http 10.1.0.1:18080/http 10.1.0.2:8080/http 10.1.0.1:17070/grpc " +
		"10.1.0.1:9000/tcp 10.1.0.2:9000/tcp")
	e := eps[1]
	if e.ServiceAccount != "spiffe://cluster.local/ns/ns1/sa/vm-sa" || e.TLSMode != model.IstioMutualTLSModeLabel ||
		e.Network != "vmnet" || e.Locality != (model.Locality{Label: "r1/z1", ClusterID: "Kubernetes"}) ||
		e.WorkloadName != "vm1" || e.Namespace != "ns1" || e.LbWeight != 3 || e.HealthStatus != 0 ||
		e.SendUnhealthyEndpoints || e.LegacyClusterPortKey != 0 {
		t.Fatalf("entry endpoint: %+v", e)
	}
	for k, v := range map[string]string{"app": "reviews", model.ClusterLabel: "Kubernetes", model.NetworkLabel: "vmnet",
		model.RegionLabel: "r1", model.ZoneLabel: "z1"} {
		if e.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, e.Labels[k], v)
		}
	}
	if e2 := eps[2]; e2.TLSMode != model.DisabledTLSModeLabel || e2.ServiceAccount != "" || e2.Network != "" {
		t.Fatalf("entry without identity: %+v", e2)
	}

	// a VM's proxy serves the service through its entry (UDP aside)
	targets := f.reg.GetProxyServiceTargets(&model.ProxyQuery{IPAddresses: []string{"10.1.0.1"}, Namespace: "ns1"})
	var ts []string
	for _, tg := range targets {
		ts = append(ts, fmt.Sprintf("%s:%d->%d", tg.Service.Hostname, tg.Port.Port.Port, tg.Port.TargetPort))
	}
	if want := host + ":9080->18080 " + host + ":7070->17070 " + host + ":9000->9000"; strings.Join(ts, " ") != want {
		t.Fatalf("targets: %v, want %s", ts, want)
	}

	// a label change takes vm2 out; it comes back with the selector
	vm2.Spec = &networking.WorkloadEntry{Address: "10.1.0.2", Labels: map[string]string{"app": "ratings"}}
	if _, err := f.store.Update(vm2); err != nil {
		t.Fatal(err)
	}
	f.waitEndpoints("10.0.0.1:8080/http 10.1.0.1:18080/http 10.1.0.1:17070/grpc 10.1.0.1:9000/tcp")

	// the service's selector and ports are followed
	svc2 := svc.DeepCopy()
	svc2.Spec.Selector = map[string]string{"app": "ratings"}
	svc2.Spec.Ports = svc2.Spec.Ports[:1]
	f.update(svc2)
	f.waitEndpoints("10.0.0.1:8080/http 10.1.0.2:8080/http")

	// deleting the entry removes its endpoints
	if err := f.store.Delete(gvk.WorkloadEntry, "vm2", "ns1", nil); err != nil {
		t.Fatal(err)
	}
	f.waitEndpoints("10.0.0.1:8080/http")
}

// Headless services, services without a selector and ExternalName
// services select no entry.
func TestOnlyClusterIPServicesSelectWorkloadEntries(t *testing.T) {
	vm := workloadEntry("ns1", "vm1", &networking.WorkloadEntry{Address: "10.1.0.1", Labels: map[string]string{"app": "reviews"}})
	ext := service("ns1", "ext", "", map[string]string{"app": "reviews"}, port("http", 80))
	ext.Spec.Type, ext.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
	f := newEntriesFixture(t, []config.Config{vm},
		service("ns1", "headless", "None", map[string]string{"app": "reviews"}, port("http", 80)),
		service("ns1", "noselector", "10.96.0.7", nil, port("http", 80)), ext,
		service("ns1", "reviews", "10.96.0.5", map[string]string{"app": "reviews"}, port("http", 80)))
	f.waitEndpoints("10.1.0.1:80/http")
	for _, name := range []string{"headless", "noselector", "ext"} {
		if eps := f.endpoints(name+".ns1.svc.cluster.local", "ns1"); len(eps) != 0 {
			t.Errorf("%s: %s", name, summary(eps))
		}
	}
}
