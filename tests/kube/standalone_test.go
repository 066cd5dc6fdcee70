package kube_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meshplane/istiod/tests/kube"
)

// StartServer, the entry point for commands, gives a server with the CRDs
// asked for and a kubeconfig in the directory, and Stop ends it.
func TestStartServer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	env, err := kube.StartServer(dir, kube.WithCRDs("virtualservices.networking.istio.io"))
	if env != nil {
		defer env.Stop()
	}
	if err != nil {
		t.Fatal(err)
	}
	if env.Kubeconfig != filepath.Join(dir, "kubeconfig") {
		t.Errorf("kubeconfig at %s, want it in %s", env.Kubeconfig, dir)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("through the kubeconfig: %v", err)
	}
	if _, err := env.Extensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "virtualservices.networking.istio.io", metav1.GetOptions{}); err != nil {
		t.Errorf("the CRD asked for: %v", err)
	}
	if _, err := env.Extensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "gateways.networking.istio.io", metav1.GetOptions{}); err == nil {
		t.Error("a CRD not asked for is installed")
	}
	env.Stop()
	if _, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
		t.Error("the server still answers after Stop")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("directory: %v", err)
	}
}
