package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/tests/kube"
)

// The CRDs the mesh is made of; the API server gets only these (and the
// control planes see the others as not installed, which both tolerate).
var meshResources = map[string]string{
	"ServiceEntry":    "serviceentries",
	"DestinationRule": "destinationrules",
	"VirtualService":  "virtualservices",
	"WorkloadEntry":   "workloadentries",
}

const meshGroup, meshVersion = "networking.istio.io", "v1"

// kubeMesh is the mesh as objects in a real API server: the same
// ServiceEntries, WorkloadEntries, DestinationRules and VirtualServices as
// the file mode's directory, created through the API.
type kubeMesh struct {
	m    *mesh
	env  *kube.Env
	dyn  dynamic.Interface
	kube kubernetes.Interface
}

// startKube starts etcd and kube-apiserver with every CRD of
// manifests/crds/ (as a cluster with Istio installed has them), writing the
// kubeconfig into dir.
func startKube(dir string) (*kube.Env, error) {
	env, err := kube.StartServer(dir)
	if err != nil && env != nil {
		env.Stop()
	}
	return env, err
}

// newKubeMesh returns a client for the mesh of m on env. The tool's own
// client is not rate limited (client-go's default is 5 requests a second).
func newKubeMesh(env *kube.Env, m *mesh) (*kubeMesh, error) {
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.QPS, cfg.Burst = 1000, 2000
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &kubeMesh{m: m, env: env, dyn: dyn, kube: k}, nil
}

// objects are the mesh's API objects in creation order: per service its
// ServiceEntry, DestinationRule, WorkloadEntries and VirtualService.
func (k *kubeMesh) objects() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for s := 0; s < k.m.services; s++ {
		docs := append(k.m.serviceDocs(s), k.m.virtualService(s, initialV1, initialV2))
		for _, d := range docs {
			u, err := decodeObject(d)
			if err != nil {
				return nil, err
			}
			out = append(out, u)
		}
	}
	return out, nil
}

// decodeObject turns one YAML document of the mesh into an object.
func decodeObject(doc string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		return nil, fmt.Errorf("mesh document: %v\n%s", err, doc)
	}
	if _, ok := meshResources[u.GetKind()]; !ok {
		return nil, fmt.Errorf("mesh document of unexpected kind %q", u.GetKind())
	}
	return u, nil
}

func resourceOf(kind string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: meshGroup, Version: meshVersion, Resource: meshResources[kind]}
}

// create makes the namespaces (the mesh's and istiod's) and every object,
// a few requests at a time. Existing objects are an error: the mesh is
// created once per API server.
func (k *kubeMesh) create(ctx context.Context) (int, error) {
	nss := []string{istiodNamespace}
	for i := 0; i < k.m.namespaces; i++ {
		nss = append(nss, fmt.Sprintf("ns-%d", i))
	}
	for _, n := range nss {
		_, err := k.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, fmt.Errorf("namespace %s: %v", n, err)
		}
	}
	objs, err := k.objects()
	if err != nil {
		return 0, err
	}
	work := make(chan *unstructured.Unstructured)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range work {
				_, err := k.dyn.Resource(resourceOf(u.GetKind())).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
				if err != nil {
					select {
					case errs <- fmt.Errorf("creating %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err):
					default:
					}
				}
			}
		}()
	}
	for _, u := range objs {
		select {
		case work <- u:
		case err := <-errs:
			close(work)
			wg.Wait()
			return 0, err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return len(objs), nil
}

// change sets the target VirtualService's weights to those of round r (0:
// the initial ones) with a merge patch of its spec, one write as a user's
// kubectl apply would make.
func (k *kubeMesh) change(ctx context.Context, r int) error {
	v1, v2 := changedWeights(r)
	u, err := decodeObject(k.m.virtualService(0, v1, v2))
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"spec": u.Object["spec"]})
	if err != nil {
		return err
	}
	_, err = k.dyn.Resource(resourceOf("VirtualService")).Namespace(u.GetNamespace()).
		Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
