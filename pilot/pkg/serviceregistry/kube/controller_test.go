package kube_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshplane/istiod/pilot/pkg/model"
	registry "github.com/meshplane/istiod/pilot/pkg/serviceregistry/kube"
)

const host = "reviews.ns1.svc.cluster.local"

func TestServiceAndEndpointsFromPod(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", Labels: map[string]string{
		model.RegionLabel: "r1", model.ZoneLabel: "z1", model.SubzoneLabel: "s1"}}}
	// the network of the system namespace (istiod's) is the cluster's
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-system", Labels: map[string]string{model.NetworkLabel: "net1"}}}
	p := pod("ns1", "reviews-v1-abc", "10.0.0.1", map[string]string{"app": "reviews", model.TLSModeLabel: "istio"})
	p.Spec.NodeName = "node1"
	f := newFixture(t, registry.Options{TrustDomain: "example.org", SystemNamespace: "istio-system"}, node, ns, p,
		service("ns1", "reviews", "10.96.0.5", map[string]string{"app": "reviews"}, port("http", 9080)),
		slice("ns1", "reviews-1", "reviews", []discoveryv1.EndpointPort{slicePort("http", 9080)},
			ep{addr: "10.0.0.1", pod: "reviews-v1-abc"}, ep{addr: "10.0.0.9", ready: ptr(false)}))

	svc := f.reg.GetService(host)
	if svc == nil || svc.DefaultAddress != "10.96.0.5" || svc.Ports[0].Protocol != "HTTP" {
		t.Fatalf("service: %+v", svc)
	}
	eps := f.endpoints(host, "ns1")
	if len(eps) != 2 {
		t.Fatalf("endpoints: %d", len(eps))
	}
	e := eps[0]
	if e.ServiceAccount != "spiffe://example.org/ns/ns1/sa/sa-reviews-v1-abc" || e.TLSMode != "istio" ||
		e.Network != "net1" || e.Locality.Label != "r1/z1/s1" || e.Locality.ClusterID != "Kubernetes" ||
		e.NodeName != "node1" || e.WorkloadName != "reviews-v1-abc" || e.Namespace != "ns1" ||
		e.HealthStatus != model.Healthy || e.EndpointPort != 9080 || e.ServicePortName != "http" {
		t.Fatalf("pod endpoint: %+v", e)
	}
	for k, v := range map[string]string{"app": "reviews", model.RegionLabel: "r1", model.ZoneLabel: "z1",
		model.SubzoneLabel: "s1", model.ClusterLabel: "Kubernetes", model.NetworkLabel: "net1", model.HostnameLabel: "node1"} {
		if e.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, e.Labels[k], v)
		}
	}
	if u := eps[1]; u.HealthStatus != model.UnHealthy || !u.SendUnhealthyEndpoints || u.ServiceAccount != "" || u.Network != "net1" {
		t.Fatalf("not-ready endpoint must be kept unhealthy: %+v", u)
	}
}

func withSA(p *corev1.Pod, sa string) *corev1.Pod {
	p.Spec.ServiceAccountName = sa
	return p
}

func baseObjects() []runtime.Object {
	return []runtime.Object{
		withSA(pod("ns1", "r1", "10.0.0.1", map[string]string{"app": "reviews"}), "reviews"),
		withSA(pod("ns1", "r2", "10.0.0.2", map[string]string{"app": "reviews"}), "reviews"),
		service("ns1", "reviews", "10.96.0.5", map[string]string{"app": "reviews"}, port("http", 9080)),
		service("ns1", "ratings", "10.96.0.6", map[string]string{"app": "ratings"}, port("http", 9080)),
		slice("ns1", "reviews-1", "reviews", []discoveryv1.EndpointPort{slicePort("http", 9080)}, ep{addr: "10.0.0.1", pod: "r1"}),
		slice("ns1", "ratings-1", "ratings", []discoveryv1.EndpointPort{slicePort("http", 9080)}, ep{addr: "10.0.0.7"}),
	}
}

// Scaling a service's endpoints is an EDS-only update of that service.
func TestScalingIsIncremental(t *testing.T) {
	f := newFixture(t, registry.Options{}, baseObjects()...)
	seq, pseq := f.rec.Seq(), f.pushes.Seq()
	f.update(slice("ns1", "reviews-1", "reviews", []discoveryv1.EndpointPort{slicePort("http", 9080)},
		ep{addr: "10.0.0.1", pod: "r1"}, ep{addr: "10.0.0.2", pod: "r2"}))
	e := f.wait(f.rec, seq, "eds", func(e model.XDSEvent) bool { return e.Type == model.XDSEventEDS && len(e.Endpoints) == 2 })
	if e.Hostname != host || e.Namespace != "ns1" {
		t.Fatalf("eds for %s/%s", e.Namespace, e.Hostname)
	}
	push := f.wait(f.pushes, pseq, "push", func(e model.XDSEvent) bool { return e.Type == model.XDSEventConfig })
	if push.Push.Full || !push.Push.Reason.Has(model.EndpointUpdate) {
		t.Fatalf("want incremental push, got %+v", push.Push)
	}
	if _, ok := push.Push.ConfigsUpdated[model.ServiceConfigKey(host, "ns1")]; !ok || len(push.Push.ConfigsUpdated) != 1 {
		t.Fatalf("keys: %v", push.Push.ConfigsUpdated)
	}
	for _, ev := range f.rec.Since(seq) {
		if ev.Type != model.XDSEventEDS || ev.Hostname != host {
			t.Fatalf("unexpected call for another service or kind: %+v", ev)
		}
	}
}

// A new service and a deleted service are full pushes with ServiceEntry keys.
func TestServiceAddDeleteAreFull(t *testing.T) {
	f := newFixture(t, registry.Options{}, baseObjects()...)
	seq := f.rec.Seq()
	f.create(service("ns1", "details", "10.96.0.8", nil, port("http", 9080)))
	add := f.wait(f.rec, seq, "svc add", func(e model.XDSEvent) bool { return e.Type == model.XDSEventService })
	if add.Event != model.EventAdd || add.Hostname != "details.ns1.svc.cluster.local" {
		t.Fatalf("svc add: %+v", add)
	}
	full := f.wait(f.rec, seq, "full", func(e model.XDSEvent) bool { return e.Type == model.XDSEventConfig })
	if !full.Push.Full || !full.Push.Reason.Has(model.ServiceUpdate) {
		t.Fatalf("push: %+v", full.Push)
	}
	if _, ok := full.Push.ConfigsUpdated[model.ServiceConfigKey("details.ns1.svc.cluster.local", "ns1")]; !ok {
		t.Fatalf("keys: %v", full.Push.ConfigsUpdated)
	}

	seq = f.rec.Seq()
	f.deleteService("ns1", "reviews")
	del := f.wait(f.rec, seq, "svc delete", func(e model.XDSEvent) bool { return e.Type == model.XDSEventService })
	if del.Event != model.EventDelete || del.Hostname != host {
		t.Fatalf("delete: %+v", del)
	}
	f.wait(f.rec, seq, "full", func(e model.XDSEvent) bool { return e.Type == model.XDSEventConfig && e.Push.Full })
	f.eventually("service gone", func() bool { return f.reg.GetService(host) == nil })
	f.eventually("endpoints gone", func() bool { _, ok := f.index.ShardsFor(host, "ns1"); return !ok })
}

// A changed port is a full push; a no-op write (resource version only) is none.
func TestPortChangeIsFull(t *testing.T) {
	f := newFixture(t, registry.Options{}, baseObjects()...)
	seq := f.rec.Seq()
	f.update(service("ns1", "reviews", "10.96.0.5", map[string]string{"app": "reviews"}, port("http", 9080), port("grpc", 9090)))
	e := f.wait(f.rec, seq, "full", func(e model.XDSEvent) bool { return e.Type == model.XDSEventConfig })
	if !e.Push.Full {
		t.Fatalf("push: %+v", e.Push)
	}
	if got := f.reg.GetService(host).Ports; len(got) != 2 || got[1].Protocol != "GRPC" {
		t.Fatalf("ports: %v", got)
	}
}

// A service account change of an endpoint is a full push (through the index).
func TestServiceAccountChangeIsFull(t *testing.T) {
	f := newFixture(t, registry.Options{}, baseObjects()...)
	pseq := f.pushes.Seq()
	p := pod("ns1", "r1", "10.0.0.1", map[string]string{"app": "reviews"})
	p.Spec.ServiceAccountName = "other"
	f.update(p)
	e := f.wait(f.pushes, pseq, "full", func(e model.XDSEvent) bool { return e.Type == model.XDSEventConfig })
	if !e.Push.Full {
		t.Fatalf("want full push on service account change: %+v", e.Push)
	}
	if sas := mustShards(t, f, host).ServiceAccounts(); len(sas) != 1 || sas[0] != "spiffe://cluster.local/ns/ns1/sa/other" {
		t.Fatalf("service accounts: %v", sas)
	}
}

func mustShards(t *testing.T, f *fixture, h string) *model.EndpointShards {
	t.Helper()
	s, ok := f.index.ShardsFor(h, "ns1")
	if !ok {
		t.Fatalf("no shards for %s", h)
	}
	return s
}

func TestReadinessConditions(t *testing.T) {
	f := newFixture(t, registry.Options{},
		service("ns1", "reviews", "10.96.0.5", nil, port("http", 9080)),
		slice("ns1", "reviews-1", "reviews", []discoveryv1.EndpointPort{slicePort("http", 9080)},
			ep{addr: "10.0.0.1"}, ep{addr: "10.0.0.2", ready: ptr(true)}, ep{addr: "10.0.0.3", ready: ptr(false)},
			ep{addr: "10.0.0.4", ready: ptr(false), terminating: ptr(true)}))
	want := []model.HealthStatus{model.Healthy, model.Healthy, model.UnHealthy, model.Terminating}
	f.eventually("endpoints", func() bool { return len(f.endpoints(host, "ns1")) == 4 })
	for i, e := range f.endpoints(host, "ns1") {
		if e.HealthStatus != want[i] {
			t.Errorf("%s: health %d, want %d", e.FirstAddress(), e.HealthStatus, want[i])
		}
	}
}

// A slice for a Service that does not exist is reported and not served;
// when the Service appears its endpoints do, and the report goes.
func TestSliceForUnknownService(t *testing.T) {
	f := newFixture(t, registry.Options{},
		slice("ns1", "ghost-1", "ghost", []discoveryv1.EndpointPort{slicePort("http", 80)}, ep{addr: "10.0.0.1"}))
	ghost := "ghost.ns1.svc.cluster.local"
	f.eventually("warning", func() bool { return f.board.Count("warning") == 1 })
	if len(f.endpoints(ghost, "ns1")) != 0 {
		t.Fatal("endpoints of an unknown service must not be served")
	}
	f.create(service("ns1", "ghost", "10.96.0.9", nil, port("http", 80)))
	f.eventually("endpoints after service", func() bool { return len(f.endpoints(ghost, "ns1")) == 1 })
	f.eventually("warning cleared", func() bool { return f.board.Count("warning") == 0 })
}

// A slice owned by its (deleted) Service waits for garbage collection
// quietly.
func TestOwnedSliceOfDeletedServiceIsQuiet(t *testing.T) {
	s := slice("ns1", "gone-1", "gone", []discoveryv1.EndpointPort{slicePort("http", 80)}, ep{addr: "10.0.0.1"})
	s.OwnerReferences = []metav1.OwnerReference{{Kind: "Service", Name: "gone", APIVersion: "v1", UID: "u"}}
	f := newFixture(t, registry.Options{}, s)
	if f.board.Count("warning") != 0 {
		t.Fatalf("problems: %+v", f.board.List())
	}
}

// An endpoint whose pod the registry has not seen is left out until the pod
// arrives, then gets the pod's metadata.
func TestPodArrivingAfterSlice(t *testing.T) {
	f := newFixture(t, registry.Options{},
		service("ns1", "reviews", "10.96.0.5", nil, port("http", 9080)),
		slice("ns1", "reviews-1", "reviews", []discoveryv1.EndpointPort{slicePort("http", 9080)}, ep{addr: "10.0.0.1", pod: "late"}))
	if n := len(f.endpoints(host, "ns1")); n != 0 {
		t.Fatalf("endpoint of an unknown pod served: %d", n)
	}
	f.create(pod("ns1", "late", "10.0.0.1", map[string]string{"app": "reviews"}))
	f.eventually("endpoint", func() bool {
		eps := f.endpoints(host, "ns1")
		return len(eps) == 1 && eps[0].ServiceAccount == "spiffe://cluster.local/ns/ns1/sa/sa-late"
	})
}

// An endpoint without targetRef gets the metadata of the pod with its IP in
// the slice's namespace.
func TestEndpointWithoutTargetRefFindsPodByIP(t *testing.T) {
	f := newFixture(t, registry.Options{},
		pod("ns1", "manual", "10.0.0.3", map[string]string{"app": "x"}),
		service("ns1", "reviews", "10.96.0.5", nil, port("http", 9080)),
		slice("ns1", "reviews-1", "reviews", []discoveryv1.EndpointPort{slicePort("http", 9080)}, ep{addr: "10.0.0.3"}))
	f.eventually("endpoint", func() bool {
		eps := f.endpoints(host, "ns1")
		ok := len(eps) == 1 && eps[0].WorkloadName == "manual" && eps[0].Labels["app"] == "x"
		if !ok && len(eps) == 1 {
			f.t.Logf("endpoint so far: workload %q labels %v", eps[0].WorkloadName, eps[0].Labels)
		}
		return ok
	})
}

// A headless service's endpoint change also needs a full push.
func TestHeadlessEndpointsAreFull(t *testing.T) {
	f := newFixture(t, registry.Options{}, service("ns1", "db", corev1.ClusterIPNone, nil, port("tcp", 5432)))
	seq := f.rec.Seq()
	f.create(slice("ns1", "db-1", "db", []discoveryv1.EndpointPort{slicePort("tcp", 5432)}, ep{addr: "10.0.0.4"}))
	e := f.wait(f.rec, seq, "full", func(e model.XDSEvent) bool { return e.Type == model.XDSEventConfig })
	if !e.Push.Full || !e.Push.Reason.Has("headlessendpoint") {
		t.Fatalf("push: %+v", e.Push)
	}
	if svc := f.reg.GetService("db.ns1.svc.cluster.local"); svc.Resolution != model.Passthrough || svc.DefaultAddress != model.UnspecifiedIP {
		t.Fatalf("headless service: %+v", svc)
	}
}

type nsFilter struct{ allowed map[string]bool }

func (n nsFilter) Filter(ns string) bool { return n.allowed[ns] }
func (n nsFilter) AddHandler(func())     {}

func TestNamespaceFilter(t *testing.T) {
	f := newFixture(t, registry.Options{NamespaceFilter: nsFilter{map[string]bool{"ns1": true}}},
		service("ns1", "reviews", "10.96.0.5", nil, port("http", 9080)),
		service("hidden", "reviews", "10.96.0.6", nil, port("http", 9080)),
		slice("hidden", "reviews-1", "reviews", []discoveryv1.EndpointPort{slicePort("http", 9080)}, ep{addr: "10.0.0.1"}))
	if got := f.reg.Services(); len(got) != 1 || got[0].Attributes.Namespace != "ns1" {
		t.Fatalf("services: %v", got)
	}
	if _, ok := f.index.ShardsFor("reviews.hidden.svc.cluster.local", "hidden"); ok {
		t.Fatal("endpoints of a filtered namespace")
	}
}

func TestGetProxyServiceTargets(t *testing.T) {
	p := pod("ns1", "r1", "10.0.0.1", map[string]string{"app": "reviews"})
	p.Spec.Containers = []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}}}
	named := port("http", 9080)
	named.TargetPort = intstr.FromString("web")
	numbered := port("grpc", 9090)
	numbered.TargetPort = intstr.FromInt32(7070)
	f := newFixture(t, registry.Options{}, p,
		service("ns1", "reviews", "10.96.0.5", map[string]string{"app": "reviews"}, named, numbered),
		service("ns1", "other", "10.96.0.6", map[string]string{"app": "other"}, port("http", 80)))
	got := f.reg.GetProxyServiceTargets(&model.ProxyQuery{IPAddresses: []string{"10.0.0.1"}})
	if len(got) != 2 || got[0].Service.Hostname != host || got[0].Port.TargetPort != 8080 || got[1].Port.TargetPort != 7070 {
		t.Fatalf("targets: %+v", got)
	}
	byLabels := f.reg.GetProxyServiceTargets(&model.ProxyQuery{Labels: map[string]string{"app": "other"}, Namespace: "ns1"})
	if len(byLabels) != 1 || byLabels[0].Port.TargetPort != 80 {
		t.Fatalf("targets by labels: %+v", byLabels)
	}
	if none := f.reg.GetProxyServiceTargets(&model.ProxyQuery{IPAddresses: []string{"10.0.0.1"}, ClusterID: "other"}); none != nil {
		t.Fatalf("other cluster: %+v", none)
	}
}

// Changing a pod's labels tells the push engine about its proxy.
func TestPodChangeIsProxyUpdate(t *testing.T) {
	f := newFixture(t, registry.Options{}, baseObjects()...)
	seq := f.rec.Seq()
	f.update(withSA(pod("ns1", "r2", "10.0.0.2", map[string]string{"app": "reviews", "version": "v2"}), "reviews"))
	e := f.wait(f.rec, seq, "proxy", func(e model.XDSEvent) bool { return e.Type == model.XDSEventProxy })
	if e.IP != "10.0.0.2" || e.ClusterID != "Kubernetes" {
		t.Fatalf("proxy update: %+v", e)
	}
}

func TestMalformedPortIsReported(t *testing.T) {
	f := newFixture(t, registry.Options{},
		service("ns1", "reviews", "10.96.0.5", nil, port("http", 9080), port("bad", 0), port("dup", 9080)))
	svc := f.reg.GetService(host)
	if len(svc.Ports) != 1 {
		t.Fatalf("ports: %v", svc.Ports)
	}
	f.eventually("two warnings", func() bool { return f.board.Count("warning") == 2 })
}

func TestRegistryEventsMetric(t *testing.T) {
	before := counterValue(registry.RegistryEvents("Services", "add"))
	newFixture(t, registry.Options{}, baseObjects()...)
	if got := counterValue(registry.RegistryEvents("Services", "add")) - before; got < 2 {
		t.Fatalf("pilot_k8s_reg_events{type=Services,event=add} grew by %v", got)
	}
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
