package kube_test

import (
	"context"
	"testing"

	networkingv1alpha3api "istio.io/api/networking/v1alpha3"
	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meshplane/istiod/tests/kube"
)

// A VirtualService written as networking.istio.io/v1alpha3 reads back as v1:
// the CRDs serve every version from one storage schema.
func TestVirtualServiceAcrossVersions(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	ctx := context.Background()

	vs := &networkingv1alpha3.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: "reviews", Namespace: ns},
		Spec: networkingv1alpha3api.VirtualService{
			Hosts: []string{"reviews"},
			Http: []*networkingv1alpha3api.HTTPRoute{{
				Route: []*networkingv1alpha3api.HTTPRouteDestination{{
					Destination: &networkingv1alpha3api.Destination{Host: "reviews", Subset: "v2"},
					Weight:      100,
				}},
			}},
		},
	}
	if _, err := env.Istio.NetworkingV1alpha3().VirtualServices(ns).Create(ctx, vs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create v1alpha3: %v", err)
	}
	got, err := env.Istio.NetworkingV1().VirtualServices(ns).Get(ctx, "reviews", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get v1: %v", err)
	}
	if got.APIVersion != "" && got.APIVersion != "networking.istio.io/v1" {
		t.Errorf("apiVersion = %q, want networking.istio.io/v1", got.APIVersion)
	}
	if len(got.Spec.Hosts) != 1 || got.Spec.Hosts[0] != "reviews" {
		t.Errorf("hosts = %v, want [reviews]", got.Spec.Hosts)
	}
	if len(got.Spec.Http) != 1 || len(got.Spec.Http[0].Route) != 1 ||
		got.Spec.Http[0].Route[0].Destination.GetSubset() != "v2" || got.Spec.Http[0].Route[0].Weight != 100 {
		t.Errorf("http = %v, want one route to reviews subset v2 weight 100", got.Spec.Http)
	}
}

// The kubeconfig file reaches the same server (the istiod binary uses it).
func TestKubeconfigFile(t *testing.T) {
	env := kube.Shared(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatalf("loading %s: %v", env.Kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("get namespace default through the kubeconfig: %v", err)
	}
}

// Every CRD of manifests/crds/ is Established on the shared server.
func TestSharedHasAllCRDs(t *testing.T) {
	env := kube.Shared(t)
	names := kube.CRDNames(t)
	if len(names) != 26 {
		t.Errorf("manifests/crds/ holds %d CRDs, want 15 Istio + 11 Gateway API", len(names))
	}
	for _, name := range names {
		crd, err := env.Extensions.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !established(crd) {
			t.Errorf("%s is not Established", name)
		}
	}
}

// A CRD skipped at start is absent, and InstallCRDs adds it later.
func TestInstallSkippedCRDLater(t *testing.T) {
	const vsCRD = "virtualservices.networking.istio.io"
	env := kube.Start(t,
		kube.WithCRDs(vsCRD, "gateways.gateway.networking.k8s.io"),
		kube.WithoutCRDs(vsCRD))
	ctx := context.Background()
	crds := env.Extensions.ApiextensionsV1().CustomResourceDefinitions()

	if _, err := crds.Get(ctx, vsCRD, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get %s before install: err = %v, want NotFound", vsCRD, err)
	}
	if _, err := crds.Get(ctx, "gateways.gateway.networking.k8s.io", metav1.GetOptions{}); err != nil {
		t.Fatalf("selected CRD missing: %v", err)
	}

	env.InstallCRDs(t, vsCRD)
	crd, err := crds.Get(ctx, vsCRD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !established(crd) {
		t.Fatalf("%s not Established after InstallCRDs", vsCRD)
	}
	ns := env.NewNamespace(t, nil).Name
	if _, err := env.Istio.NetworkingV1().VirtualServices(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list VirtualServices after install: %v", err)
	}
	env.InstallCRDs(t, vsCRD) // idempotent
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
