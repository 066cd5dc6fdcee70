package kubemesh

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meshplane/istiod/pkg/config/mesh"
)

func TestConfigMapSourceFeedsWatcher(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	client := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio", Namespace: "istio-system"}, Data: map[string]string{"mesh": "trustDomain: one.example\n"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "istio-system"}, Data: map[string]string{"mesh": "trustDomain: wrong.example\n"}},
	)
	src := NewConfigMapSource(client, "istio-system", ConfigMapName(""), stop, "mesh", "meshNetworks")
	if !src.WaitUntilSynced(stop) {
		t.Fatal("not synced")
	}
	if src.Key("meshNetworks").Current() != nil {
		t.Error("absent key should be a missing source")
	}
	w := mesh.NewWatcher(mesh.Sources("", false, src.Key("mesh"), nil), stop)
	if got := w.Mesh().GetTrustDomain(); got != "one.example" {
		t.Fatalf("trustDomain %q", got)
	}
	changed := make(chan struct{}, 10)
	w.AddMeshHandler(func() { changed <- struct{}{} })
	ctx := context.Background()
	upd := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istio", Namespace: "istio-system"}, Data: map[string]string{"mesh": "trustDomain: two.example\n"}}
	if _, err := client.CoreV1().ConfigMaps("istio-system").Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no mesh change")
	}
	if got := w.Mesh().GetTrustDomain(); got != "two.example" {
		t.Errorf("trustDomain %q", got)
	}
	// another ConfigMap's edits are not seen
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "istio-system"}, Data: map[string]string{"mesh": "trustDomain: nope\n"}}
	if _, err := client.CoreV1().ConfigMaps("istio-system").Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().ConfigMaps("istio-system").Delete(ctx, "istio", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no change on delete")
	}
	if got := w.Mesh().GetTrustDomain(); got != "two.example" && got != "cluster.local" {
		t.Errorf("trustDomain after delete %q", got)
	}
	if ConfigMapName("canary") != "istio-canary" {
		t.Error("revision ConfigMap name")
	}
}
