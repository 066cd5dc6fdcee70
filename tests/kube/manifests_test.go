package kube_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/meshplane/istiod/tests/kube"
)

// Every object of manifests/istiod/ is accepted by the real API server, with
// strict field validation (an unknown or misspelt field fails), and the set
// holds the objects the deployment needs.
func TestIstiodManifestsAccepted(t *testing.T) {
	env := kube.Shared(t)
	ctx := context.Background()
	if _, err := env.Kube.CoreV1().Namespaces().Get(ctx, "istio-system", metav1.GetOptions{}); err != nil {
		env.CreateNamespace(t, "istio-system", nil)
	}

	root, err := kube.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "manifests", "istiod", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in manifests/istiod/ (%v)", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(env.Kube.Discovery()))

	created := map[string]bool{}
	for _, file := range files {
		for _, obj := range readObjects(t, file) {
			gvk := obj.GroupVersionKind()
			id := gvk.Kind + " " + obj.GetNamespace() + "/" + obj.GetName()
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Errorf("%s: %s: %v", filepath.Base(file), id, err)
				continue
			}
			res := env.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace())
			if _, err := res.Create(ctx, obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}); err != nil {
				t.Errorf("%s: %s rejected: %v", filepath.Base(file), id, err)
				continue
			}
			created[id] = true
			if obj.GetNamespace() == "" && strings.HasSuffix(gvk.Kind, "WebhookConfiguration") {
				// cluster-wide admission hooks to a Service that does not run
				// here would refuse other tests' pods and Istio objects
				name := obj.GetName()
				t.Cleanup(func() { _ = res.Delete(context.Background(), name, metav1.DeleteOptions{}) })
			}
		}
	}
	for _, want := range []string{
		"ServiceAccount istio-system/istiod",
		"ClusterRole /istiod-clusterrole-istio-system",
		"ClusterRoleBinding /istiod-clusterrole-istio-system",
		"Role istio-system/istiod",
		"RoleBinding istio-system/istiod",
		"ConfigMap istio-system/istio",
		"Deployment istio-system/istiod",
		"Service istio-system/istiod",
		"ConfigMap istio-system/istio-sidecar-injector",
		"MutatingWebhookConfiguration /istio-sidecar-injector",
		"ValidatingWebhookConfiguration /istio-validator-istio-system",
	} {
		if !created[want] {
			t.Errorf("manifests/istiod/ did not create %s", want)
		}
	}
	svc, err := env.Kube.CoreV1().Services("istio-system").Get(ctx, "istiod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP == "" {
		t.Errorf("Service istiod got no cluster IP")
	}
}

func readObjects(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("%s: %v", file, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		objs = append(objs, obj)
	}
	return objs
}
