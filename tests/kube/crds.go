package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// crdFiles are the files under manifests/crds/ the harness installs from.
var crdFiles = []string{"istio.yaml", "gateway-api.yaml"}

var (
	crdOnce sync.Once
	crdAll  map[string]*apiextensionsv1.CustomResourceDefinition
	crdErr  error
)

// allCRDs returns every CRD of manifests/crds/ by name (parsed once per
// process). Callers must not mutate the returned objects; they deep-copy.
func allCRDs() (map[string]*apiextensionsv1.CustomResourceDefinition, error) {
	crdOnce.Do(func() { crdAll, crdErr = readCRDs() })
	return crdAll, crdErr
}

func readCRDs() (map[string]*apiextensionsv1.CustomResourceDefinition, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, name := range crdFiles {
		path := filepath.Join(root, "manifests", "crds", name)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%w (run `make crds`)", err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 64*1024)
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := dec.Decode(crd); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			if crd.Name == "" {
				continue // empty document
			}
			if crd.Kind != "CustomResourceDefinition" {
				return nil, fmt.Errorf("%s: unexpected %s %q", path, crd.Kind, crd.Name)
			}
			out[crd.Name] = crd
		}
	}
	return out, nil
}

// CRDNames lists the names (plural.group) of every CRD in manifests/crds/, sorted.
func CRDNames(t testing.TB) []string {
	t.Helper()
	all, err := allCRDs()
	if err != nil {
		t.Fatalf("kube: reading CRDs: %v", err)
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// InstallCRDs creates the named CRDs of manifests/crds/ (all of them when no
// name is given) and waits until each is Established and served by discovery.
// CRDs that already exist are left as they are and waited for.
func (e *Env) InstallCRDs(t testing.TB, names ...string) {
	t.Helper()
	if err := e.installCRDs(context.Background(), names); err != nil {
		t.Fatalf("kube: %v", err)
	}
}

func (e *Env) installCRDs(ctx context.Context, names []string) error {
	all, err := allCRDs()
	if err != nil {
		return fmt.Errorf("reading CRDs: %w", err)
	}
	if len(names) == 0 {
		for n := range all {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, n := range names {
		crd, ok := all[n]
		if !ok {
			return fmt.Errorf("no CRD %q in manifests/crds/ (have %s)", n, strings.Join(sortedKeys(all), ", "))
		}
		crds = append(crds, crd)
	}
	client := e.Extensions.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		obj := crd.DeepCopy()
		if _, err := client.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, crd := range crds {
		if err := e.waitEstablished(ctx, crd); err != nil {
			return err
		}
	}
	return nil
}

// waitEstablished waits for the CRD's Established condition and for every
// served version to appear in discovery (informers and RESTMappers need both).
func (e *Env) waitEstablished(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	client := e.Extensions.ApiextensionsV1().CustomResourceDefinitions()
	var last string
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := client.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		if !isEstablished(got) {
			last = "not Established"
			return false, nil
		}
		for _, v := range got.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := got.Spec.Group + "/" + v.Name
			list, err := e.Kube.Discovery().ServerResourcesForGroupVersion(gv)
			if err != nil || !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == got.Spec.Names.Plural }) {
				last = gv + " " + got.Spec.Names.Plural + " not in discovery"
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not ready: %s (%w)", crd.Name, last, err)
	}
	return nil
}

func isEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
