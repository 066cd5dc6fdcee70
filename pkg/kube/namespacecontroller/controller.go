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

	factory    informers.SharedInformerFactory
	namespaces listersv1.NamespaceLister
	configMaps listersv1.ConfigMapLister
	cmInformer cache.SharedIndexInformer
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
}

// New builds a controller; Run starts it.
func New(client kubernetes.Interface, opts Options) *Controller {
	c := &Controller{client: client, opts: opts, root: opts.Root, crl: opts.CRL,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespacecontroller"})}
	c.factory = informers.NewSharedInformerFactory(client, 0)
	nsInf := c.factory.Core().V1().Namespaces()
	cmInf := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = ConfigLabel + "=true"
	})).Core().V1().ConfigMaps()
	c.namespaces, c.configMaps = nsInf.Lister(), cmInf.Lister()
	c.synced = []cache.InformerSynced{nsInf.Informer().HasSynced, cmInf.Informer().HasSynced}
	enqueueNS := func(o any) {
		if ns, ok := o.(*corev1.Namespace); ok {
			c.queue.Add(ns.Name)
		}
	}
	enqueueCM := func(o any) {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if cm, ok := o.(*corev1.ConfigMap); ok && (cm.Name == RootCertConfigMap || cm.Name == CRLConfigMap) {
			c.queue.Add(cm.Namespace)
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
	c.cmInformer = cmInf.Informer()
	return c
}

// SetRoot publishes a new root (after rotation) to every namespace.
func (c *Controller) SetRoot(root []byte) {
	c.mu.Lock()
	c.root = append([]byte(nil), root...)
	c.mu.Unlock()
	c.ResyncAll()
}

// ResyncAll rechecks every namespace (the namespace filter changed).
func (c *Controller) ResyncAll() {
	nss, err := c.namespaces.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ns := range nss {
		c.queue.Add(ns.Name)
	}
}

// Run writes until stop closes.
func (c *Controller) Run(stop <-chan struct{}) {
	c.factory.Start(stop)
	go c.cmInformer.Run(stop)
	if !cache.WaitForCacheSync(stop, c.synced...) {
		return
	}
	c.ResyncAll()
	go func() {
		<-stop
		c.queue.ShutDown()
	}()
	for c.processNext() {
	}
}

func (c *Controller) processNext() bool {
	ns, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(ns)
	if err := c.reconcile(ns); err != nil {
		scope.Warnf("namespace %s: %v (retrying)", ns, err)
		c.queue.AddRateLimited(ns)
		return true
	}
	c.queue.Forget(ns)
	return true
}

// reconcile makes the namespace's two ConfigMaps say what they must.
func (c *Controller) reconcile(ns string) error {
	n, err := c.namespaces.Get(ns)
	if apierrors.IsNotFound(err) || (err == nil && n.DeletionTimestamp != nil) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.opts.Filter != nil && !c.opts.Filter(ns) {
		return nil
	}
	c.mu.Lock()
	root, crl := string(c.root), string(c.crl)
	c.mu.Unlock()
	if err := c.ensure(ns, RootCertConfigMap, map[string]string{RootCertKey: root}); err != nil {
		return err
	}
	return c.ensure(ns, CRLConfigMap, map[string]string{CRLKey: crl})
}

func (c *Controller) ensure(ns, name string, data map[string]string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	api := c.client.CoreV1().ConfigMaps(ns)
	cur, err := c.configMaps.ConfigMaps(ns).Get(name)
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
