package krt_test

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/meshplane/istiod/pkg/kube/krt"
)

func configMap(name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Data:       map[string]string{"v": value},
	}
}

// configMapInformer returns an informer over the fake clientset and a channel
// closed once its watch is established: the fake clientset does not replay
// writes made between the list and the watch.
func configMapInformer(client *fake.Clientset) (cache.SharedIndexInformer, <-chan struct{}) {
	watching := make(chan struct{})
	var once sync.Once
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := client.CoreV1().ConfigMaps(metav1.NamespaceAll).Watch(ctx, o)
			once.Do(func() { close(watching) })
			return w, err
		},
	}
	// The fake clientset does not stream watch-lists; the wrapper tells the
	// reflector so.
	return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client),
		&corev1.ConfigMap{}, 0, cache.Indexers{}), watching
}

func TestWrapClient(t *testing.T) {
	stop := stopper(t)
	ctx := t.Context()
	client := fake.NewClientset(configMap("initial", "0"))
	informer, watching := configMapInformer(client)
	cms := krt.WrapClient[*corev1.ConfigMap](informer, krt.WithName("configmaps"), krt.WithStop(stop))
	values := krt.MapCollection(cms, func(cm *corev1.ConfigMap) named {
		return named{cm.Namespace + "/" + cm.Name, cm.Data["v"]}
	}, krt.WithStop(stop))
	if cms.HasSynced() {
		t.Fatal("synced before the informer started")
	}
	go informer.Run(stop)
	waitSynced(t, cms)
	waitSynced(t, values)
	waitClosed(t, watching, "the informer's watch")
	if got := cms.GetKey("ns/initial"); got == nil || (*got).Data["v"] != "0" {
		t.Fatalf("initial object = %v", got)
	}
	r := record(t, values)
	r.expect(t, krt.EventAdd, nil, &named{"ns/initial", "0"})

	cmsClient := client.CoreV1().ConfigMaps("ns")
	if _, err := cmsClient.Create(ctx, configMap("a", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.expect(t, krt.EventAdd, nil, &named{"ns/a", "1"})
	if _, err := cmsClient.Update(ctx, configMap("a", "2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.expect(t, krt.EventUpdate, &named{"ns/a", "1"}, &named{"ns/a", "2"})
	if err := cmsClient.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.expect(t, krt.EventDelete, &named{"ns/a", "2"}, nil)
}

func TestWrapClientTombstone(t *testing.T) {
	stop := stopper(t)
	client := fake.NewClientset(configMap("x", "1"), configMap("y", "1"))
	informer, _ := configMapInformer(client)
	cms := krt.WrapClient[*corev1.ConfigMap](informer, krt.WithStop(stop))
	go informer.Run(stop)
	waitSynced(t, cms)
	krt.DeliverInformerDelete(cms, cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: configMap("x", "1")})
	krt.DeliverInformerDelete(cms, cache.DeletedFinalStateUnknown{Key: "ns/y", Obj: "not a configmap"})
	if cms.GetKey("ns/x") != nil || cms.GetKey("ns/y") != nil {
		t.Fatal("tombstoned objects still present")
	}
}

func TestWrapClientComparesResourceVersion(t *testing.T) {
	stop := stopper(t)
	informer, _ := configMapInformer(fake.NewClientset())
	cms := krt.WrapClient[*corev1.ConfigMap](informer, krt.WithStop(stop))
	r := record(t, cms)
	withRV := func(value, rv string) *corev1.ConfigMap {
		cm := configMap("a", value)
		cm.ResourceVersion = rv
		return cm
	}
	krt.DeliverInformerSet(cms, withRV("1", "5"))
	r.next(t)
	krt.DeliverInformerSet(cms, withRV("changed", "5")) // same version: compared equal, no event
	krt.DeliverInformerSet(cms, withRV("2", "6"))
	if e := r.next(t); e.Event != krt.EventUpdate || (*e.New).ResourceVersion != "6" {
		t.Fatalf("got %v %v, want the update to version 6", e.Event, (*e.New).ResourceVersion)
	}
}
