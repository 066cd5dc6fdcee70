package refmesh

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	meshconfig "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
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
func ReadFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(refdata.Dir(t, "bookinfo"), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

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

// BuildRegistries runs the reference input through the Kubernetes and
// ServiceEntry registries, through client-go's fake clientset, plus the
// "kubernetes" Service every API server has (Istio's answer lists it).
func BuildRegistries(t testing.TB) Registries {
	t.Helper()
	objs, cfgs := SplitInput(t, ReadFile(t, "input/bookinfo.yaml"))
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

// Env runs the reference mesh's Kubernetes objects through the registries
// and its Istio objects and mesh file into an environment.
func Env(t testing.TB) (Registries, *model.Environment) {
	t.Helper()
	src := BuildRegistries(t)
	_, cfgs := SplitInput(t, ReadFile(t, "input/bookinfo.yaml"))
	store := memory.New(collections.Pilot)
	for _, c := range cfgs {
		if _, err := store.Create(c); err != nil {
			t.Fatal(err)
		}
	}
	m, _, err := mesh.ApplyMeshConfig(string(ReadFile(t, "input/mesh.yaml")), mesh.DefaultMeshConfig())
	if err != nil {
		t.Fatal(err)
	}
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: src.Agg, EndpointIndex: src.Index,
		Mesh: func() *meshconfig.MeshConfig { return m }})
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
		if strings.Contains(doc, "istio.io/") {
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
