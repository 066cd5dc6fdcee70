package ambient_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/ambient"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/tests/refdata"
)

// mesh is the inputs of an index as static collections a test writes.
type mesh struct {
	pods       krt.StaticCollection[*corev1.Pod]
	services   krt.StaticCollection[*corev1.Service]
	namespaces krt.StaticCollection[*corev1.Namespace]
	nodes      krt.StaticCollection[*corev1.Node]
	slices     krt.StaticCollection[*discoveryv1.EndpointSlice]
	configs    map[config.GroupVersionKind]krt.StaticCollection[config.Config]
}

var configKinds = []config.GroupVersionKind{gvk.ServiceEntry, gvk.WorkloadEntry, gvk.AuthorizationPolicy,
	gvk.PeerAuthentication, gvk.KubernetesGateway, gvk.GatewayClass}

// newMesh puts objects (Kubernetes objects and config.Configs) in static
// collections.
func newMesh(objs []any) *mesh {
	m := &mesh{
		pods:       krt.NewStaticCollection[*corev1.Pod](nil),
		services:   krt.NewStaticCollection[*corev1.Service](nil),
		namespaces: krt.NewStaticCollection[*corev1.Namespace](nil),
		nodes:      krt.NewStaticCollection[*corev1.Node](nil),
		slices:     krt.NewStaticCollection[*discoveryv1.EndpointSlice](nil),
		configs:    map[config.GroupVersionKind]krt.StaticCollection[config.Config]{},
	}
	for _, k := range configKinds {
		m.configs[k] = krt.NewStaticCollection[config.Config](nil)
	}
	for _, o := range objs {
		m.set(o)
	}
	return m
}

func (m *mesh) set(o any) {
	switch v := o.(type) {
	case *corev1.Pod:
		m.pods.Set(v)
	case *corev1.Service:
		m.services.Set(v)
	case *corev1.Namespace:
		m.namespaces.Set(v)
	case *corev1.Node:
		m.nodes.Set(v)
	case *discoveryv1.EndpointSlice:
		m.slices.Set(v)
	case config.Config:
		if c, ok := m.configs[v.GroupVersionKind]; ok {
			c.Set(v)
		}
	}
}

func (m *mesh) index(t *testing.T) *ambient.Index { return m.indexWith(t, nil) }

// indexWith is index with a namespace filter (nil: none).
func (m *mesh) indexWith(t *testing.T, f ambient.NamespaceFilter) *ambient.Index {
	t.Helper()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	x := ambient.New(ambient.Inputs{
		Pods: m.pods, Services: m.services, Namespaces: m.namespaces, Nodes: m.nodes, EndpointSlices: m.slices,
		ServiceEntries:        m.configs[gvk.ServiceEntry],
		WorkloadEntries:       m.configs[gvk.WorkloadEntry],
		AuthorizationPolicies: m.configs[gvk.AuthorizationPolicy],
		PeerAuthentications:   m.configs[gvk.PeerAuthentication],
		KubernetesGateways:    m.configs[gvk.KubernetesGateway],
		GatewayClasses:        m.configs[gvk.GatewayClass],
	}, ambient.Options{ClusterID: "Kubernetes", SystemNamespace: "istio-system", Namespaces: f, Stop: stop})
	eventually(t, "index synced", x.HasSynced)
	return x
}

// eventually polls cond until it holds (derived collections are eventually
// consistent), failing after 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// parseObjects decodes a multi-document YAML: Istio and Gateway API kinds
// into config.Configs, the rest through the Kubernetes scheme.
func parseObjects(t *testing.T, data string) []any {
	t.Helper()
	var out []any
	for _, doc := range strings.Split(data, "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(head.APIVersion, "istio.io/") || strings.Contains(head.APIVersion, "gateway.networking.k8s.io/") {
			for _, d := range crd.Parse([]byte(doc), crd.Options{Domain: "cluster.local"}) {
				if d.Err != nil || d.Config == nil {
					t.Fatalf("%s: %v", d.Where(), d.Err)
				}
				out = append(out, *d.Config)
			}
			continue
		}
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		o, _, err := scheme.Codecs.UniversalDeserializer().Decode(js, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// referenceIPs are the pod IPs the kubelet reported (the reference README).
var referenceIPs = map[string]string{
	"flights-7b9c4-q1w2e":          "10.244.5.1",
	"booking-5d6e7-r3t4y":          "10.244.6.2",
	"booking-waypoint-8f9a0-u5i6o": "10.244.5.9",
	"rooms-1a2b3-p7a8s":            "10.244.6.7",
	"legacy-4c5d6-d9f0g":           "10.244.5.20",
}

// referenceObjects is the reference ambient mesh as the API server held it
// when Istio answered: the input files, plus what the cluster's own
// components wrote (see clusterState).
func referenceObjects(t *testing.T) []any {
	t.Helper()
	dir := refdata.Dir(t, "ambient")
	var objs []any
	for _, f := range []string{"base.yaml", "slices.yaml", "istio.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, "input", f))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, parseObjects(t, string(b))...)
	}
	return clusterState(t, dir, objs)
}

// clusterState applies what other components wrote to the inputs:
//   - kubelet: pods Running and Ready with the README's IPs;
//   - API server defaulting: Service ipFamilies/clusterIPs, targetPort =
//     port, TCP protocols; the "default/kubernetes" Service it creates
//     (its target port 28150 is the test API server's secure port);
//   - Istio's gateway controller: the waypoint Gateway's status addresses
//     (real/gateways.json) and the istio-waypoint GatewayClass;
//   - Istio's IP allocator: the ServiceEntry's status addresses (the
//     addresses wds.json shows).
func clusterState(t *testing.T, dir string, objs []any) []any {
	t.Helper()
	gwStatus := gatewayStatus(t, filepath.Join(dir, "real", "gateways.json"))
	for i, o := range objs {
		switch v := o.(type) {
		case *corev1.Pod:
			ip := referenceIPs[v.Name]
			v.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
			for c := range v.Spec.Containers {
				for p := range v.Spec.Containers[c].Ports {
					if v.Spec.Containers[c].Ports[p].Protocol == "" {
						v.Spec.Containers[c].Ports[p].Protocol = corev1.ProtocolTCP
					}
				}
			}
		case *corev1.Service:
			defaultService(v)
		case config.Config:
			switch v.GroupVersionKind {
			case gvk.KubernetesGateway:
				v.Status = gwStatus[v.Namespace+"/"+v.Name]
			case gvk.ServiceEntry:
				if v.Name == "airline-api" {
					v.Status = &networking.ServiceEntryStatus{Addresses: []*networking.ServiceEntryAddress{
						{Host: "api.airline.example", Value: "240.240.0.1"},
						{Host: "api.airline.example", Value: "2001:2::1"}}}
				}
			}
			objs[i] = v
		}
	}
	kubernetes := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default",
		Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Name: "https", Port: 443,
			TargetPort: intstr.FromInt32(28150)}}}}
	defaultService(kubernetes)
	class := config.Config{Meta: config.Meta{GroupVersionKind: gvk.GatewayClass, Name: "istio-waypoint"},
		Spec: &gatewayv1.GatewayClassSpec{ControllerName: "istio.io/mesh-controller"}}
	return append(objs, kubernetes, class,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-system"}})
}

func defaultService(s *corev1.Service) {
	if len(s.Spec.ClusterIPs) == 0 && s.Spec.ClusterIP != "" {
		s.Spec.ClusterIPs = []string{s.Spec.ClusterIP}
	}
	if len(s.Spec.IPFamilies) == 0 {
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	}
	if s.Spec.Type == "" {
		s.Spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range s.Spec.Ports {
		p := &s.Spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort.IntVal == 0 && p.TargetPort.StrVal == "" {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
}

func gatewayStatus(t *testing.T, path string) map[string]*gatewayv1.GatewayStatus {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []gatewayv1.Gateway `json:"items"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]*gatewayv1.GatewayStatus{}
	for i := range list.Items {
		g := &list.Items[i]
		out[g.Namespace+"/"+g.Name] = &gatewayv1.GatewayStatus{Addresses: g.Status.Addresses}
	}
	return out
}
