package namespace

import (
	"context"
	"testing"
	"time"

	meshconfig "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

func ns(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestDiscoveryFilter(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	client := fake.NewClientset(ns("a", map[string]string{"mesh": "yes"}), ns("b", nil))
	f := informers.NewSharedInformerFactory(client, 0)
	inf := f.Core().V1().Namespaces().Informer()
	filter := NewDiscoveryFilter(inf, &meshconfig.MeshConfig{})
	changed := make(chan struct{}, 10)
	filter.AddHandler(func() { changed <- struct{}{} })
	f.Start(stop)
	if !cache.WaitForCacheSync(stop, filter.HasSynced) {
		t.Fatal("filter did not sync")
	}
	if filter.Err() != nil {
		t.Fatal(filter.Err())
	}

	if !filter.Filter("a") || !filter.Filter("b") || !filter.Filter("unknown") || !filter.Filter("") {
		t.Error("without selectors every namespace is watched")
	}
	filter.SetMesh(&meshconfig.MeshConfig{DiscoverySelectors: []*meshconfig.LabelSelector{{MatchLabels: map[string]string{"mesh": "yes"}}}})
	if !filter.Filter("a") || filter.Filter("b") || !filter.Filter("") {
		t.Errorf("selectors: a=%v b=%v", filter.Filter("a"), filter.Filter("b"))
	}
	// labeling b brings it in, and the handler hears about it
	for len(changed) > 0 {
		<-changed
	}
	if _, err := client.CoreV1().Namespaces().Update(context.Background(), ns("b", map[string]string{"mesh": "yes"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no change notification")
	}
	if !filter.Filter("b") {
		t.Error("b not selected after labeling")
	}
	// matchExpressions work too
	filter.SetMesh(&meshconfig.MeshConfig{DiscoverySelectors: []*meshconfig.LabelSelector{{MatchExpressions: []*meshconfig.LabelSelectorRequirement{{Key: "mesh", Operator: "DoesNotExist"}}}}})
	if filter.Filter("a") || filter.Filter("b") {
		t.Error("DoesNotExist selector")
	}
}
