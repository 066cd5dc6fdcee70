package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/tests/kube"
)

// registryService is the part of a /debug/registryz entry the tests read.
type registryService struct {
	Hostname       string `json:"hostname"`
	DefaultAddress string `json:"defaultAddress"`
	Attributes     struct {
		Namespace       string
		ServiceRegistry string
	}
	Ports []struct {
		Name     string `json:"name"`
		Port     int    `json:"port"`
		Protocol string `json:"protocol"`
	} `json:"ports"`
}

type shardEndpoint struct {
	Addresses       []string
	EndpointPort    int
	ServicePortName string
	ServiceAccount  string
	HealthStatus    int
	WorkloadName    string
	Labels          map[string]string
}

type shardz map[string]map[string]struct {
	Shards map[string][]shardEndpoint
}

func (d *istiod) registryz() []registryService {
	d.t.Helper()
	code, body := d.get("/debug/registryz")
	if code != 200 {
		d.t.Fatalf("registryz: %d %s", code, body)
	}
	var out []registryService
	if err := json.Unmarshal(body, &out); err != nil {
		d.t.Fatal(err)
	}
	return out
}

func (d *istiod) service(hostname string) *registryService {
	for _, s := range d.registryz() {
		if s.Hostname == hostname {
			return &s
		}
	}
	return nil
}

// endpoints returns the endpoints of a service in a namespace and shard.
func (d *istiod) endpoints(hostname, ns, shard string) []shardEndpoint {
	d.t.Helper()
	code, body := d.get("/debug/endpointShardz")
	if code != 200 {
		d.t.Fatalf("endpointShardz: %d %s", code, body)
	}
	var out shardz
	if err := json.Unmarshal(body, &out); err != nil {
		d.t.Fatal(err)
	}
	return out[hostname][ns].Shards[shard]
}

func addresses(eps []shardEndpoint) string {
	var out []string
	for _, e := range eps {
		out = append(out, strings.Join(e.Addresses, ",")+fmt.Sprintf(":%d", e.EndpointPort))
	}
	return strings.Join(out, " ")
}

// runningPod creates a ready pod with an IP (no kubelet runs: the test
// writes the status).
func runningPod(t *testing.T, env *kube.Env, ns, name, ip, sa string, labels map[string]string) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{ServiceAccountName: sa, Containers: []corev1.Container{{Name: "app", Image: "example/app",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
	}
	created, err := env.Kube.CoreV1().Pods(ns).Create(registryCtx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if _, err := env.Kube.CoreV1().Pods(ns).UpdateStatus(registryCtx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func endpointSlice(ns, name, svc string, pods map[string]string) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptrTo("http"), Port: ptrTo(int32(8080)), Protocol: ptrTo(corev1.ProtocolTCP)}},
	}
	for _, ip := range sortedIPs(pods) {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pods[ip]}})
	}
	return es
}

// A Service and its EndpointSlice appear on /debug/registryz and
// /debug/endpointShardz; scaling is an EDS-only update; deleting the Service
// removes it.
func TestRegistryKubernetesService(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	host := "reviews." + ns + ".svc.cluster.local"
	runningPod(t, env, ns, "reviews-1", "10.200.0.1", "reviews", map[string]string{"app": "reviews"})
	runningPod(t, env, ns, "reviews-2", "10.200.0.2", "reviews", map[string]string{"app": "reviews"})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "reviews", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "reviews"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 9080, TargetPort: intstr.FromString("http")}}}}
	if _, err := env.Kube.CoreV1().Services(ns).Create(registryCtx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slices := env.Kube.DiscoveryV1().EndpointSlices(ns)
	if _, err := slices.Create(registryCtx, endpointSlice(ns, "reviews-abc", "reviews", map[string]string{"10.200.0.1": "reviews-1"}),
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "service on registryz", func() (bool, string) {
		s := d.service(host)
		return s != nil && s.Attributes.ServiceRegistry == "Kubernetes" && s.DefaultAddress != "0.0.0.0" &&
			len(s.Ports) == 1 && s.Ports[0].Protocol == "HTTP", fmt.Sprintf("%+v", s)
	})
	eventually(t, "endpoint on endpointShardz", func() (bool, string) {
		eps := d.endpoints(host, ns, "Kubernetes/Kubernetes")
		return len(eps) == 1 && eps[0].ServiceAccount == "spiffe://cluster.local/ns/"+ns+"/sa/reviews" &&
			eps[0].WorkloadName == "reviews-1" && eps[0].HealthStatus == 1, addresses(eps)
	})

	// scale up: an incremental (EDS-only) push of this service
	rec := d.srv.XDSUpdates()
	seq := rec.Seq()
	cur, err := slices.Get(registryCtx, "reviews-abc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	next := endpointSlice(ns, "reviews-abc", "reviews", map[string]string{"10.200.0.1": "reviews-1", "10.200.0.2": "reviews-2"})
	next.ResourceVersion = cur.ResourceVersion
	if _, err := slices.Update(registryCtx, next, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	key := model.ServiceConfigKey(host, ns)
	push := waitXDS(t, rec, seq, func(e model.XDSEvent) bool {
		_, ok := e.Push.ConfigsUpdated[key]
		return e.Type == model.XDSEventConfig && ok
	})
	if push.Push.Full || !push.Push.Reason.Has(model.EndpointUpdate) {
		t.Fatalf("scaling must be an EDS-only push, got %+v", push.Push)
	}
	eventually(t, "two endpoints", func() (bool, string) {
		eps := d.endpoints(host, ns, "Kubernetes/Kubernetes")
		return len(eps) == 2, addresses(eps)
	})

	// delete: gone from both endpoints (the slice stays: no garbage collector)
	if err := env.Kube.CoreV1().Services(ns).Delete(registryCtx, "reviews", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "service removed", func() (bool, string) {
		s := d.service(host)
		return s == nil && len(d.endpoints(host, ns, "Kubernetes/Kubernetes")) == 0, fmt.Sprintf("%+v", s)
	})
}

// A ServiceEntry with a workloadSelector picks up a Pod and a WorkloadEntry
// of its namespace.
func TestRegistryServiceEntrySelectsPodAndWorkloadEntry(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	runningPod(t, env, ns, "vm-pod", "10.201.0.1", "vm", map[string]string{"app": "vm"})
	we := &clientnetworking.WorkloadEntry{ObjectMeta: metav1.ObjectMeta{Name: "vm-1", Namespace: ns},
		Spec: networking.WorkloadEntry{Address: "192.168.50.1", Labels: map[string]string{"app": "vm"}, ServiceAccount: "vm"}}
	if _, err := env.Istio.NetworkingV1().WorkloadEntries(ns).Create(registryCtx, we, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	se := &clientnetworking.ServiceEntry{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: ns},
		Spec: networking.ServiceEntry{Hosts: []string{"vm.example.internal"},
			Ports:            []*networking.ServicePort{{Number: 80, Name: "http", Protocol: "HTTP"}},
			WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "vm"}},
			Resolution:       networking.ServiceEntry_STATIC, Location: networking.ServiceEntry_MESH_INTERNAL}}
	if _, err := env.Istio.NetworkingV1().ServiceEntries(ns).Create(registryCtx, se, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "service entry on registryz", func() (bool, string) {
		s := d.service("vm.example.internal")
		return s != nil && s.Attributes.ServiceRegistry == "External" && s.Attributes.Namespace == ns, fmt.Sprintf("%+v", s)
	})
	eventually(t, "pod and workload entry selected", func() (bool, string) {
		eps := d.endpoints("vm.example.internal", ns, "External/Kubernetes")
		return addresses(eps) == "10.201.0.1:8080 192.168.50.1:80", addresses(eps)
	})
}

// Bad input is reported on /debug/warningz and stops nothing: a
// ServiceEntry host that is a Kubernetes Service's, a WorkloadEntry with an
// invalid address, an EndpointSlice of a Service that does not exist.
func TestRegistryBadInputIsReported(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	host := "ratings." + ns + ".svc.cluster.local"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ratings", Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 9080}}}}
	if _, err := env.Kube.CoreV1().Services(ns).Create(registryCtx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clash := &clientnetworking.ServiceEntry{ObjectMeta: metav1.ObjectMeta{Name: "clash", Namespace: ns},
		Spec: networking.ServiceEntry{Hosts: []string{host}, Ports: []*networking.ServicePort{{Number: 9080, Name: "http", Protocol: "HTTP"}},
			Resolution: networking.ServiceEntry_DNS}}
	if _, err := env.Istio.NetworkingV1().ServiceEntries(ns).Create(registryCtx, clash, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bad := &clientnetworking.WorkloadEntry{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns},
		Spec: networking.WorkloadEntry{Address: "not a valid address!"}}
	_, weErr := env.Istio.NetworkingV1().WorkloadEntries(ns).Create(registryCtx, bad, metav1.CreateOptions{})
	if _, err := env.Kube.DiscoveryV1().EndpointSlices(ns).Create(registryCtx,
		endpointSlice(ns, "ghost-1", "ghost", map[string]string{"10.202.0.1": "nobody"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "problems listed", func() (bool, string) {
		var clashSeen, weSeen, ghostSeen bool
		for _, p := range d.warnings() {
			clashSeen = clashSeen || (p.Object == "ServiceEntry "+ns+"/clash" && strings.Contains(p.Message, "Kubernetes Service"))
			weSeen = weSeen || p.Object == "WorkloadEntry "+ns+"/bad"
			ghostSeen = ghostSeen || p.Object == "EndpointSlice "+ns+"/ghost-1"
		}
		// the API server may refuse the WorkloadEntry itself: rejected at the edge
		weSeen = weSeen || weErr != nil
		return clashSeen && weSeen && ghostSeen, fmt.Sprintf("clash=%v we=%v ghost=%v", clashSeen, weSeen, ghostSeen)
	})
	// both services are listed; the Kubernetes one answers for the host
	if s := d.srv.ServiceDiscovery().GetServiceInNamespace(host, ns); s == nil || s.Attributes.ServiceRegistry != model.Kubernetes {
		t.Fatalf("precedence: %+v", s)
	}
}

func waitXDS(t *testing.T, rec *model.RecordingXDSUpdater, seq uint64, match func(model.XDSEvent) bool) model.XDSEvent {
	t.Helper()
	stop := make(chan struct{})
	timer := time.AfterFunc(30*time.Second, func() { close(stop) })
	defer timer.Stop()
	e, ok := rec.WaitFor(stop, seq, match)
	if !ok {
		t.Fatalf("no matching XDS update; got %+v", rec.Since(seq))
	}
	return e
}

var registryCtx = context.Background()

func ptrTo[T any](v T) *T { return &v }

func sortedIPs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
