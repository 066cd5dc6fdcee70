package namespacecontroller

import (
	"context"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/meshplane/istiod/pkg/log"
)

var scope = log.RegisterScope("nscontroller", "root certificate ConfigMaps in every namespace")

// Istio's names.
const (
	RootCertConfigMap = "istio-ca-root-cert"
	RootCertKey       = "root-cert.pem"
	CRLConfigMap      = "istio-ca-crl"
	CRLKey            = "ca-crl.pem"
	// ConfigLabel marks the ConfigMaps istiod writes.
	ConfigLabel = "istio.io/config"
)

// ignoredNamespaces get no ConfigMaps, as in Istio: the namespaces the
// injector ignores (pkg/kube/inject) but kube-system, where ztunnel may run.
var ignoredNamespaces = map[string]bool{"kube-public": true, "kube-node-lease": true, "local-path-storage": true}

// Options configure a Controller.
type Options struct {
	// Filter reports whether istiod serves a namespace (discovery
	// selectors); nil: every namespace.
	Filter func(ns string) bool
	// Root is the root certificate PEM to publish.
	Root []byte
	// CRL is the certificate revocation list PEM ("" as Istio writes it
	// when there is none).
	CRL []byte
}

// Controller keeps the ConfigMaps of every served namespace right.
type Controller struct {
	client kubernetes.Interface
	opts   Options

	mu   sync.Mutex
	root []byte
	crl  []byte
	cur  *term // the running term (nil while not leading)
}

// term is one run of the controller (one leadership term): its informers,
// listers and queue start and end with it, so a replica that leads again
// later starts afresh.
type term struct {
	namespaces listersv1.NamespaceLister
	configMaps listersv1.ConfigMapLister
	queue      workqueue.TypedRateLimitingInterface[string]
}

// New builds a controller; Run starts it.
func New(client kubernetes.Interface, opts Options) *Controller {
	return &Controller{client: client, opts: opts, root: opts.Root, crl: opts.CRL}
}

// start builds and starts a term's informers; they stop with stop.
func (c *Controller) start(stop <-chan struct{}) (*term, []cache.InformerSynced) {
	t := &term{queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespacecontroller"})}
	nsFactory := informers.NewSharedInformerFactory(c.client, 0)
	cmFactory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = ConfigLabel + "=true"
	}))
	nsInf, cmInf := nsFactory.Core().V1().Namespaces(), cmFactory.Core().V1().ConfigMaps()
	t.namespaces, t.configMaps = nsInf.Lister(), cmInf.Lister()
	enqueueNS := func(o any) {
		if ns, ok := o.(*corev1.Namespace); ok {
			t.queue.Add(ns.Name)
		}
	}
	enqueueCM := func(o any) {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if cm, ok := o.(*corev1.ConfigMap); ok && (cm.Name == RootCertConfigMap || cm.Name == CRLConfigMap) {
			t.queue.Add(cm.Namespace)
		}
	}
	reportErr := func(what string, err error) {
		if err != nil {
			scope.Errorf("%s informer refused the handler: %v", what, err)
		}
	}
	_, err := nsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueueNS,
		UpdateFunc: func(_, o any) { enqueueNS(o) }})
	reportErr("Namespace", err)
	_, err = cmInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueueCM,
		UpdateFunc: func(_, o any) { enqueueCM(o) }, DeleteFunc: enqueueCM})
	reportErr("ConfigMap", err)
	nsFactory.Start(stop)
	cmFactory.Start(stop)
	return t, []cache.InformerSynced{nsInf.Informer().HasSynced, cmInf.Informer().HasSynced}
}

// SetRoot publishes a new root (after rotation) to every namespace.
func (c *Controller) SetRoot(root []byte) {
	c.mu.Lock()
	c.root = append([]byte(nil), root...)
	c.mu.Unlock()
	c.ResyncAll()
}

// ResyncAll rechecks every namespace (the namespace filter changed); it
// does nothing while the controller does not run.
func (c *Controller) ResyncAll() {
	c.mu.Lock()
	t := c.cur
	c.mu.Unlock()
	if t != nil {
		t.resyncAll()
	}
}

func (t *term) resyncAll() {
	nss, err := t.namespaces.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ns := range nss {
		t.queue.Add(ns.Name)
	}
}

// Run writes until stop closes. It may run again later (a new leadership
// term), never twice at once.
func (c *Controller) Run(stop <-chan struct{}) {
	t, synced := c.start(stop)
	defer t.queue.ShutDown()
	if !cache.WaitForCacheSync(stop, synced...) {
		return
	}
	c.mu.Lock()
	c.cur = t
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.cur = nil
		c.mu.Unlock()
	}()
	t.resyncAll()
	go func() {
		<-stop
		t.queue.ShutDown()
	}()
	for c.processNext(t) {
	}
}

func (c *Controller) processNext(t *term) bool {
	ns, quit := t.queue.Get()
	if quit {
		return false
	}
	defer t.queue.Done(ns)
	if err := c.reconcile(t, ns); err != nil {
		scope.Warnf("namespace %s: %v (retrying)", ns, err)
		t.queue.AddRateLimited(ns)
		return true
	}
	t.queue.Forget(ns)
	return true
}

// reconcile makes the namespace's two ConfigMaps say what they must.
func (c *Controller) reconcile(t *term, ns string) error {
	n, err := t.namespaces.Get(ns)
	if apierrors.IsNotFound(err) || (err == nil && n.DeletionTimestamp != nil) {
		return nil
	}
	if err != nil {
		return err
	}
	if ignoredNamespaces[ns] || (c.opts.Filter != nil && !c.opts.Filter(ns)) {
		return nil
	}
	c.mu.Lock()
	root, crl := string(c.root), string(c.crl)
	c.mu.Unlock()
	if err := c.ensure(t, ns, RootCertConfigMap, map[string]string{RootCertKey: root}); err != nil {
		return err
	}
	return c.ensure(t, ns, CRLConfigMap, map[string]string{CRLKey: crl})
}

func (c *Controller) ensure(t *term, ns, name string, data map[string]string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	api := c.client.CoreV1().ConfigMaps(ns)
	cur, err := t.configMaps.ConfigMaps(ns).Get(name)
	if apierrors.IsNotFound(err) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{ConfigLabel: "true"}}, Data: data}
		_, err = api.Create(ctx, cm, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			if err == nil {
				scope.Infof("wrote ConfigMap %s/%s", ns, name)
			}
			return err
		}
		// it exists without our label: read it from the API server
		if cur, err = api.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if maps.Equal(cur.Data, data) && cur.Labels[ConfigLabel] == "true" {
		return nil // never rewritten when unchanged
	}
	upd := cur.DeepCopy()
	upd.Data = data
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	upd.Labels[ConfigLabel] = "true"
	if _, err := api.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return err
	}
	scope.Infof("rewrote ConfigMap %s/%s", ns, name)
	return nil
}
