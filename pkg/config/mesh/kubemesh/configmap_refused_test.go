package kubemesh

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshplane/istiod/pkg/log/logtest"
)

// An informer that has stopped refuses handlers. The source must report
// that it does not watch the ConfigMap, and not claim to be synced or make
// the caller wait for a sync that cannot come.
func TestConfigMapSourceReportsRefusedHandler(t *testing.T) {
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio", Namespace: "istio-system"},
		Data: map[string]string{"mesh": "trustDomain: one.example\n"}})
	inf := informers.NewSharedInformerFactory(client, 0).Core().V1().ConfigMaps().Informer()
	closed := make(chan struct{})
	close(closed)
	inf.Run(closed) // returns once stopped
	if !inf.IsStopped() {
		t.Fatal("informer not stopped")
	}

	logs := logtest.Capture(t)
	stop := make(chan struct{})
	defer close(stop)
	src := newConfigMapSource(inf, "istio-system", "istio", stop, "mesh")

	if err := src.Err(); err == nil || !strings.Contains(err.Error(), "istio-system/istio") {
		t.Errorf("Err() = %v, want the refusal naming istio-system/istio", err)
	}
	if got := logs.Lines("ERROR", "istio-system/istio"); len(got) != 1 {
		t.Errorf("want one ERROR naming istio-system/istio, got %q\nlogs: %s", got, logs.String())
	}
	if src.HasSynced() {
		t.Error("HasSynced true for an unwatched ConfigMap")
	}
	done := make(chan bool)
	go func() { done <- src.WaitUntilSynced(stop) }()
	select {
	case ok := <-done:
		if ok {
			t.Error("WaitUntilSynced reported a sync")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("WaitUntilSynced blocks for a ConfigMap that is not watched")
	}
	if src.Key("mesh").Current() != nil {
		t.Error("key of an unwatched ConfigMap holds text")
	}
}
