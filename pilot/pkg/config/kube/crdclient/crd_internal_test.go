package crdclient

import (
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvr"
	"github.com/meshplane/istiod/pkg/config/schema/resource"
	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/pkg/log/logtest"
)

// A CRD informer that synced and then stopped refuses new handlers. The
// watcher must say so instead of reporting that no CRD is installed.
func TestCRDWatcherReportsRefusedHandler(t *testing.T) {
	vsCRD := &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "virtualservices.networking.istio.io"},
		Spec: apiextv1.CustomResourceDefinitionSpec{Group: "networking.istio.io",
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true}}},
		Status: apiextv1.CustomResourceDefinitionStatus{Conditions: []apiextv1.CustomResourceDefinitionCondition{
			{Type: apiextv1.Established, Status: apiextv1.ConditionTrue}}},
	}
	client := kube.NewFakeClient(vsCRD)
	inf, err := client.Informer(gvr.CustomResourceDefinition)
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan struct{})
	client.Start(first)
	if !cache.WaitForCacheSync(first, inf.HasSynced) {
		t.Fatal("CRD informer did not sync")
	}
	close(first)
	for deadline := time.Now().Add(30 * time.Second); !inf.IsStopped(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("CRD informer did not stop")
		}
	}

	logs := logtest.Capture(t)
	w := newCRDWatcher(client)
	w.register(collections.VirtualService)
	stop := make(chan struct{})
	defer close(stop)
	var reported []string
	w.run(stop, func(s resource.Schema, _ bool) { reported = append(reported, s.Kind()) })

	if w.err == nil {
		t.Error("watcher recorded no error for the refused handler")
	}
	if got := logs.Lines("ERROR", "CustomResourceDefinitions"); len(got) != 1 {
		t.Errorf("want one ERROR naming CustomResourceDefinitions, got %q\nlogs: %s", got, logs.String())
	}
	if len(reported) != 0 {
		t.Errorf("kinds reported ready without a CRD watch: %v", reported)
	}
}
