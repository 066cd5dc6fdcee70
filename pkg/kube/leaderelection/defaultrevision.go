package leaderelection

import (
	"context"
	"sync"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// DefaultRevisionWebhook is the MutatingWebhookConfiguration whose
// istio.io/rev label names a cluster's default revision (istioctl tag set
// default writes it).
const DefaultRevisionWebhook = "istio-revision-tag-default"

// DefaultRevisionWatcher follows a cluster's default revision, as Istio's
// prioritized elections read it.
type DefaultRevisionWatcher struct {
	informer cache.SharedIndexInformer
	mu       sync.Mutex
	rev      string
}

// NewDefaultRevisionWatcher watches DefaultRevisionWebhook with client;
// Run starts it.
func NewDefaultRevisionWatcher(client kubernetes.Interface) *DefaultRevisionWatcher {
	api := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	sel := "metadata.name=" + DefaultRevisionWebhook
	w := &DefaultRevisionWatcher{}
	w.informer = cache.NewSharedIndexInformer(&cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return api.List(context.Background(), o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return api.Watch(context.Background(), o)
		},
	}, &admissionv1.MutatingWebhookConfiguration{}, 0, cache.Indexers{})
	set := func(o any) {
		rev := ""
		if m, ok := o.(*admissionv1.MutatingWebhookConfiguration); ok {
			rev = m.Labels["istio.io/rev"]
		}
		w.mu.Lock()
		w.rev = rev
		w.mu.Unlock()
	}
	_, _ = w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, o any) { set(o) },
		DeleteFunc: func(any) { set(nil) },
	})
	return w
}

// Run watches until stop closes.
func (w *DefaultRevisionWatcher) Run(stop <-chan struct{}) { w.informer.Run(stop) }

// Get is the default revision ("": none known).
func (w *DefaultRevisionWatcher) Get() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rev
}
