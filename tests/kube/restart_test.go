package kube_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/tests/kube"
)

// The API server stops and starts again on the same address with the same
// etcd and certificates: the client built before the outage fails during it
// and works after it, the objects are still there, and the audit log saw
// the requests of both servers.
func TestAPIServerRestart(t *testing.T) {
	env := kube.Start(t, kube.WithCRDs("virtualservices.networking.istio.io"), kube.WithAuditLog())
	ns := env.NewNamespace(t, nil).Name
	ctx := context.Background()
	if _, err := env.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}

	env.StopAPIServer(t)
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err := env.Kube.CoreV1().Namespaces().Get(short, ns, metav1.GetOptions{})
	cancel()
	if err == nil {
		t.Fatal("get during the outage succeeded")
	}

	env.StartAPIServer(t)
	if _, err := env.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace %s after the restart: %v", ns, err)
	}
	if _, err := env.Istio.NetworkingV1().VirtualServices(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list VirtualServices after the restart: %v", err)
	}

	var lists, gets int
	for _, r := range env.AuditLog(t) {
		switch {
		case r.Verb == "list" && r.Resource == "namespaces" && r.ReadsAll():
			lists++
		case r.Verb == "get" && r.Resource == "namespaces" && r.URI == "/api/v1/namespaces/"+ns:
			gets++
		}
	}
	if lists < 1 || gets != 1 {
		t.Errorf("audit log: %d namespace lists (want ≥ 1, before the outage) and %d gets of %s (want 1, after it)", lists, gets, ns)
	}
}
