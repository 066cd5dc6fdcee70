package xds_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/aggregate"
	kuberegistry "github.com/meshplane/istiod/pilot/pkg/serviceregistry/kube"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/serviceentry"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/kube"
)

// referenceDir holds what Istio 1.31's istiod answered for a small mesh
// (../shared beside the repository).
const referenceDir = "../../../../shared/reference/bookinfo"

type registrySource struct {
	agg   *aggregate.Controller
	index *model.EndpointIndex
}

func (r registrySource) Services() []*model.Service          { return r.agg.Services() }
func (r registrySource) EndpointIndex() *model.EndpointIndex { return r.index }

// TestRegistryMatchesIstio runs the reference input through the Kubernetes
// and ServiceEntry registries and compares /debug/registryz and
// /debug/endpointShardz with Istio's answers.
//
// The input is read through client-go's fake clientset, plus the
// "kubernetes" Service every API server has (Istio's answer lists it).
// Allowed differences, each explained:
//   - ResourceVersion and creationTime: assigned by the API server Istio
//     read; the fake clientset assigns neither.
//   - autoAllocatedIPv4Address / autoAllocatedIPv6Address: written into the
//     ServiceEntry's status by Istio's address allocation controller, which
//     this control plane does not run (it reads them from status when
//     present).
//   - Attributes.DNSConnectStrategy and Attributes.Visibility: Istio 1.31
//     attributes of features this registry does not model (DNS connect
//     strategy annotation, ambient visibility); zero for every service here.
func TestRegistryMatchesIstio(t *testing.T) {
	if _, err := os.Stat(referenceDir); err != nil {
		t.Skipf("reference data not available: %v", err)
	}
	src := buildReferenceRegistries(t)
	mux := http.NewServeMux()
	xds.NewDebug(xds.DebugOptions{Registry: src}).Install(mux)

	gotSvcs := decode(t, get(t, mux, "/debug/registryz")).([]any)
	wantSvcs := decode(t, readFile(t, "real/registryz.json")).([]any)
	for _, list := range [][]any{gotSvcs, wantSvcs} {
		for _, s := range list {
			m := s.(map[string]any)
			for _, k := range []string{"ResourceVersion", "creationTime", "autoAllocatedIPv4Address", "autoAllocatedIPv6Address"} {
				delete(m, k)
			}
			attrs := m["Attributes"].(map[string]any)
			delete(attrs, "DNSConnectStrategy")
			delete(attrs, "Visibility")
		}
	}
	compare(t, "registryz", gotSvcs, wantSvcs)
	compare(t, "endpointShardz", decode(t, get(t, mux, "/debug/endpointShardz")), decode(t, readFile(t, "real/endpointShardz.json")))
}

func buildReferenceRegistries(t *testing.T) registrySource {
	objs, cfgs := splitInput(t, readFile(t, "input/bookinfo.yaml"))
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
	return registrySource{agg: agg, index: index}
}

// splitInput decodes the Kubernetes objects of a multi-document YAML and
// parses its Istio configs.
func splitInput(t *testing.T, data []byte) ([]runtime.Object, []config.Config) {
	var objs []runtime.Object
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

func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(referenceDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func get(t *testing.T, h http.Handler, path string) []byte {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.RemoteAddr = "127.0.0.1:1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
	}
	return rec.Body.Bytes()
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return v
}

func compare(t *testing.T, what string, got, want any) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	g, _ := json.MarshalIndent(got, "", " ")
	w, _ := json.MarshalIndent(want, "", " ")
	t.Errorf("%s differs from Istio's:\n got %s\nwant %s", what, g, w)
}
