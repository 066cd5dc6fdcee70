package integration

import (
	"context"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/meshplane/istiod/tests/kube"
)

// warningRecorder keeps the warnings the API server sends a client.
type warningRecorder struct {
	mu  sync.Mutex
	got []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, text)
}

// In Kubernetes mode an unknown field never reaches istiod: the API server
// prunes it from the object (Istio's CRDs have structural schemas for
// spec) and says so to the writer — an error under strict field validation
// (kubectl's default), a warning otherwise. istiod then reads an object
// without the field, so it has nothing to drop or report; the directory
// source, which reads the files as written, drops and reports such fields
// itself (pilot/pkg/config/file).
func TestAPIServerTellsTheWriterOfUnknownFields(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	cfg := rest.CopyConfig(env.RESTConfig)
	rec := &warningRecorder{}
	cfg.WarningHandler = rec
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "virtualservices"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
		"metadata": map[string]any{"name": "typo", "namespace": ns},
		"spec": map[string]any{"hosts": []any{"reviews"}, "http": []any{map[string]any{
			"routez": "typo", "route": []any{map[string]any{"destination": map[string]any{"host": "reviews"}}}}}},
	}}
	ctx := context.Background()
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{FieldValidation: "Strict"}); err == nil ||
		!strings.Contains(err.Error(), `unknown field "spec.http[0].routez"`) {
		t.Fatalf("strict create with an unknown field: %v", err)
	}
	created, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{FieldValidation: "Warn"})
	if err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	warned := strings.Join(rec.got, "\n")
	rec.mu.Unlock()
	if !strings.Contains(warned, `unknown field "spec.http[0].routez"`) {
		t.Errorf("the writer was not warned of the unknown field; warnings: %q", warned)
	}
	http, _, _ := unstructured.NestedSlice(created.Object, "spec", "http")
	if len(http) != 1 {
		t.Fatalf("stored spec.http: %v", http)
	}
	if _, ok := http[0].(map[string]any)["routez"]; ok {
		t.Errorf("the API server stored the unknown field: %v", http[0])
	}
}
