package credentials

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Controller watches the cluster's Secrets that can hold certificates:
// every type but service-account tokens and Helm releases (Istio leaves
// those out too, as they are many and never certificates).
type Controller struct {
	factory  informers.SharedInformerFactory
	informer cache.SharedIndexInformer

	mu       sync.Mutex
	handlers []func(namespace, name string)
}

var _ Source = (*Controller)(nil)

// secretFieldSelector excludes the types that never hold certificates.
var secretFieldSelector = fields.AndSelectors(
	fields.OneTermNotEqualSelector("type", string(corev1.SecretTypeServiceAccountToken)),
	fields.OneTermNotEqualSelector("type", "helm.sh/release.v1"),
).String()

// NewController builds the controller; Run starts it.
func NewController(client kubernetes.Interface) *Controller {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = secretFieldSelector
	}))
	c := &Controller{factory: f, informer: f.Core().V1().Secrets().Informer()}
	_, _ = c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.changed,
		UpdateFunc: func(_, n any) { c.changed(n) },
		DeleteFunc: c.changed,
	})
	return c
}

// AddHandler calls f with the namespace and name of every Secret added,
// changed or deleted (after the initial list, too).
func (c *Controller) AddHandler(f func(namespace, name string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handlers = append(c.handlers, f)
}

func (c *Controller) changed(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	c.mu.Lock()
	hs := append([]func(namespace, name string){}, c.handlers...)
	c.mu.Unlock()
	for _, h := range hs {
		h(s.Namespace, s.Name)
	}
}

// Run starts the informer until stop closes.
func (c *Controller) Run(stop <-chan struct{}) { c.factory.Start(stop) }

// HasSynced tells whether the initial list is in.
func (c *Controller) HasSynced() bool { return c.informer.HasSynced() }

// Secret implements Source.
func (c *Controller) Secret(namespace, name string) (*corev1.Secret, bool) {
	obj, ok, err := c.informer.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	s, ok := obj.(*corev1.Secret)
	return s, ok
}

// Lookup resolves a certificate (see the package function Lookup).
func (c *Controller) Lookup(namespace, name string) (CertInfo, error) {
	return Lookup(c, namespace, name)
}
