package namespace

import (
	"strings"
	"testing"

	meshconfig "istio.io/api/mesh/v1alpha1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshplane/istiod/pkg/log/logtest"
)

// A stopped Namespace informer refuses the filter's handler; the filter must
// report it rather than silently selecting nothing.
func TestDiscoveryFilterReportsRefusedHandler(t *testing.T) {
	client := fake.NewClientset(ns("a", map[string]string{"mesh": "yes"}))
	inf := informers.NewSharedInformerFactory(client, 0).Core().V1().Namespaces().Informer()
	closed := make(chan struct{})
	close(closed)
	inf.Run(closed) // returns once stopped
	if !inf.IsStopped() {
		t.Fatal("informer not stopped")
	}

	logs := logtest.Capture(t)
	filter := NewDiscoveryFilter(inf, &meshconfig.MeshConfig{
		DiscoverySelectors: []*meshconfig.LabelSelector{{MatchLabels: map[string]string{"mesh": "yes"}}}})

	if err := filter.Err(); err == nil || !strings.Contains(err.Error(), "Namespaces") {
		t.Errorf("Err() = %v, want the refusal naming Namespaces", err)
	}
	if got := logs.Lines("ERROR", "Namespaces", "discoverySelectors"); len(got) != 1 {
		t.Errorf("want one ERROR naming Namespaces, got %q\nlogs: %s", got, logs.String())
	}
	if filter.HasSynced() {
		t.Error("HasSynced true while namespaces are not watched")
	}
}
