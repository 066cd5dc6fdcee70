package refmesh

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	meshconfig "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/aggregate"
	kuberegistry "github.com/meshplane/istiod/pilot/pkg/serviceregistry/kube"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/serviceentry"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/tests/refdata"
)

// Registries are the reference mesh's service registries and endpoint
// index, synced.
type Registries struct {
	Agg   *aggregate.Controller
	Index *model.EndpointIndex
}

// Services lists every service (a debug RegistryDebugSource).
func (r Registries) Services() []*model.Service { return r.Agg.Services() }

// EndpointIndex is the endpoint index (a debug RegistryDebugSource).
func (r Registries) EndpointIndex() *model.EndpointIndex { return r.Index }

// ReadFile reads a file of the bookinfo reference (see tests/refdata for
// what happens when it is missing).
func ReadFile(t testing.TB, rel string) []byte { return Bookinfo.ReadFile(t, rel) }

// Decode decodes JSON with numbers kept as written.
func Decode(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return v
}

// Mesh names a reference mesh: a directory of ../shared/reference and its
// input files, applied in order (a later object replaces an earlier one of
// the same kind, namespace and name).
type Mesh struct {
	Dir    string
	Inputs []string
	// PodIPs marks pods Running and ready with an IP, as the reference run
	// did (no kubelet ran), by pod name.
	PodIPs map[string]string
	// Lists are JSON files of kind List (kubectl get -o json) whose items
	// are Kubernetes objects the run had, applied after Inputs.
	Lists []string
	// Later marks inputs applied after the others: their Istio objects
	// are created a minute later (creation time orders EnvoyFilters).
	Later map[string]bool
	// Synthetic is a configz file (a JSON array of objects) whose
	// internally generated Istio objects (annotated internal.istio.io/
	// parents: those Istio derived from the Gateway API) are inputs too.
	Synthetic string
	// ClusterIPs are the addresses the reference run's API server gave
	// Services whose input names none, by "namespace/name" (the fake
	// clientset allocates nothing).
	ClusterIPs map[string]string
}

// Extensions is the extensions reference mesh: bookinfo plus Sidecars,
// Telemetries and EnvoyFilters (input/extensions.yaml), and
// input/ef-insert-a.yaml, applied 2.5 s later (its EnvoyFilter is the
// newest).
var Extensions = Mesh{Dir: "extensions", Inputs: []string{"input/bookinfo.yaml", "input/extensions.yaml", "input/ef-insert-a.yaml"},
	PodIPs:     map[string]string{"productpage-v1-abc": "10.244.0.10", "ratings-v1-abc": "10.244.0.31"},
	Later:      map[string]bool{"input/ef-insert-a.yaml": true},
	ClusterIPs: map[string]string{"other/inventory": "10.96.63.37", "istio-system/otel-collector": "10.96.135.75"}}

// Gateways is the gateways reference mesh, Istio Gateway side: the
// Services and Gateways of input/gateways.yaml, plus the objects Istio
// generated for the Gateway API Gateway (its Service is visible to every
// proxy). No mesh file: mesh defaults.
var Gateways = Mesh{Dir: "gateways", Inputs: []string{"input/gateways.yaml"}, Lists: []string{"real/generated-objects.json"},
	Synthetic: "real/configz.json"}

// Bookinfo is the bookinfo reference mesh.
var Bookinfo = Mesh{Dir: "bookinfo", Inputs: []string{"input/bookinfo.yaml"}}

// Policy is bookinfo with the security policies of ../shared/reference/policy.
var Policy = Mesh{Dir: "policy", Inputs: []string{"input/bookinfo.yaml", "input/policy.yaml"},
	PodIPs: map[string]string{"productpage-v1-abc": "10.244.0.10", "ratings-v1-abc": "10.244.0.31"}}

// ReadFile reads a file of the mesh's reference directory.
func (m Mesh) ReadFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(refdata.Dir(t, m.Dir), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// input splits the mesh's inputs into Kubernetes objects and Istio configs.
func (m Mesh) input(t testing.TB) ([]kruntime.Object, []config.Config) {
	t.Helper()
	var objs []kruntime.Object
	var cfgs []config.Config
	objIndex, cfgIndex := map[string]int{}, map[string]int{}
	for _, in := range m.Inputs {
		ins, cs := SplitInput(t, m.ReadFile(t, in))
		for _, o := range ins {
			acc, err := meta.Accessor(o)
			if err != nil {
				t.Fatal(err)
			}
			k := fmt.Sprintf("%T/%s/%s", o, acc.GetNamespace(), acc.GetName())
			if i, ok := objIndex[k]; ok {
				objs[i] = o
				continue
			}
			objIndex[k] = len(objs)
			objs = append(objs, o)
		}
		for _, c := range cs {
			if m.Later[in] {
				c.CreationTimestamp = referenceEpoch.Add(time.Minute)
			} else if c.CreationTimestamp.IsZero() {
				c.CreationTimestamp = referenceEpoch
			}
			k := c.GroupVersionKind.String() + "/" + c.Namespace + "/" + c.Name
			if i, ok := cfgIndex[k]; ok {
				cfgs[i] = c
				continue
			}
			cfgIndex[k] = len(cfgs)
			cfgs = append(cfgs, c)
		}
	}
	if m.Synthetic != "" {
		for _, c := range syntheticConfigs(t, m.ReadFile(t, m.Synthetic)) {
			k := c.GroupVersionKind.String() + "/" + c.Namespace + "/" + c.Name
			cfgIndex[k] = len(cfgs)
			cfgs = append(cfgs, c)
		}
	}
	for _, l := range m.Lists {
		for _, o := range listItems(t, m.ReadFile(t, l)) {
			acc, err := meta.Accessor(o)
			if err != nil {
				t.Fatal(err)
			}
			k := fmt.Sprintf("%T/%s/%s", o, acc.GetNamespace(), acc.GetName())
			if i, ok := objIndex[k]; ok {
				objs[i] = o
				continue
			}
			objIndex[k] = len(objs)
			objs = append(objs, o)
		}
	}
	for _, o := range objs {
		if svc, ok := o.(*corev1.Service); ok && svc.Spec.ClusterIP == "" {
			if ip, ok := m.ClusterIPs[svc.Namespace+"/"+svc.Name]; ok {
				svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip, []string{ip}
			}
		}
		if p, ok := o.(*corev1.Pod); ok {
			if ip, ok := m.PodIPs[p.Name]; ok {
				p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
					Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
			}
		}
	}
	return objs, cfgs
}

// BuildRegistries runs the bookinfo reference input through the registries
// (see Mesh.BuildRegistries).
func BuildRegistries(t testing.TB) Registries { return Bookinfo.BuildRegistries(t) }

// BuildRegistries runs the mesh's input through the Kubernetes and
// ServiceEntry registries, through client-go's fake clientset, plus the
// "kubernetes" Service every API server has (Istio's answer lists it).
func (m Mesh) BuildRegistries(t testing.TB) Registries {
	t.Helper()
	objs, cfgs := m.input(t)
	objs = append(objs, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default",
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}},
	})
	store := memory.New(collections.Pilot)
	for _, c := range cfgs {
		if _, err := store.Create(c); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	index := model.NewEndpointIndex()
	upd := model.NewEndpointIndexUpdater(index, model.NewRecordingXDSUpdater(100))
	client := kube.NewFakeClient(objs...)
	kr, err := kuberegistry.NewController(client, kuberegistry.Options{XDSUpdater: upd, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	se := serviceentry.NewController(store, serviceentry.Options{XDSUpdater: upd, Workloads: kr.Workloads(), Stop: stop})
	agg := aggregate.New(kr, se)
	client.Start(stop)
	deadline := time.Now().Add(10 * time.Second)
	for !agg.HasSynced() {
		if time.Now().After(deadline) {
			t.Fatal("registries did not sync")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return Registries{Agg: agg, Index: index}
}

// Env is Bookinfo.Env.
func Env(t testing.TB) (Registries, *model.Environment) { return Bookinfo.Env(t) }

// Env runs the mesh's Kubernetes objects through the registries and its
// Istio objects and mesh file into an environment.
func (m Mesh) Env(t testing.TB) (Registries, *model.Environment) {
	t.Helper()
	src := m.BuildRegistries(t)
	_, cfgs := m.input(t)
	store := memory.New(collections.Pilot)
	for _, c := range cfgs {
		if _, err := store.Create(c); err != nil {
			t.Fatal(err)
		}
	}
	mc := mesh.DefaultMeshConfig()
	if _, err := os.Stat(filepath.Join(refdata.Dir(t, m.Dir), "input/mesh.yaml")); err == nil {
		mc, _, err = mesh.ApplyMeshConfig(string(m.ReadFile(t, "input/mesh.yaml")), mesh.DefaultMeshConfig())
		if err != nil {
			t.Fatal(err)
		}
	}
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: src.Agg, EndpointIndex: src.Index,
		Mesh: func() *meshconfig.MeshConfig { return mc }})
	return src, env
}

// SplitInput decodes the Kubernetes objects of a multi-document YAML and
// parses its Istio configs.
func SplitInput(t testing.TB, data []byte) ([]kruntime.Object, []config.Config) {
	t.Helper()
	var objs []kruntime.Object
	var cfgs []config.Config
	for _, doc := range strings.Split(string(data), "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		if istioAPIVersion.MatchString(doc) {
			for _, d := range crd.Parse([]byte(doc), crd.Options{Schemas: collections.Pilot, Domain: "cluster.local"}) {
				if d.Err != nil {
					t.Fatal(d.Err)
				}
				if d.Config != nil {
					cfgs = append(cfgs, *d.Config)
				}
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
		objs = append(objs, o)
	}
	return objs, cfgs
}

// istioAPIVersion finds Istio documents by their apiVersion (labels such
// as security.istio.io/tlsMode appear on Kubernetes objects too).
var istioAPIVersion = regexp.MustCompile(`(?m)^apiVersion:\s*\S*istio\.io/`)

// listItems decodes the items of a List, resetting what the API server
// filled in (resource versions and UIDs do not matter to registries).
func listItems(t testing.TB, data []byte) []kruntime.Object {
	t.Helper()
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	var out []kruntime.Object
	for _, raw := range list.Items {
		o, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

// referenceEpoch is the creation time of reference inputs that give none.
var referenceEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// syntheticConfigs parses the objects of a configz dump that Istio derived
// itself (annotation internal.istio.io/parents).
func syntheticConfigs(t testing.TB, data []byte) []config.Config {
	t.Helper()
	var objs []map[string]any
	if err := json.Unmarshal(data, &objs); err != nil {
		t.Fatal(err)
	}
	var out []config.Config
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		if _, ok := ann["internal.istio.io/parents"]; !ok {
			continue
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range crd.Parse(b, crd.Options{Schemas: collections.Pilot, Domain: "cluster.local"}) {
			if d.Err != nil {
				t.Fatal(d.Err)
			}
			if d.Config != nil {
				out = append(out, *d.Config)
			}
		}
	}
	return out
}
