package deployment

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	meshconfig "istio.io/api/mesh/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/inject"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/log"
	"github.com/meshplane/istiod/pkg/monitoring"
)

var scope = log.RegisterScope("gatewaydeployment", "Deployments, Services and ServiceAccounts of Gateways")

// ProblemSource is the /debug/warningz source of the controller's problems.
const ProblemSource = "gateway-deployment"

// applies counts server-side applies by kind and result (ok, error).
var applies = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "istiod_gateway_deployment_applies_total",
	Help: "Server-side applies of the objects generated for Gateways, by kind and result (ok, error).",
}, []string{"kind", "result"})

func init() { monitoring.MustRegister(applies) }

// Options configure a Controller. The collections and informers are
// shared with the rest of istiod and only read.
type Options struct {
	// Kube writes (server-side apply), reads objects missing from the
	// controller's caches, and tells the API server's version.
	Kube kubernetes.Interface
	// Gateways and Classes are the store's Gateways and GatewayClasses;
	// ListenerSets (optional) its ListenerSets, whose listeners add ports.
	Gateways     krt.Collection[config.Config]
	Classes      krt.Collection[config.Config]
	ListenerSets krt.Collection[config.Config]
	// ConfigMaps and Namespaces are shared informers of every namespace
	// (customization ConfigMaps; revision labels and OpenShift ranges).
	ConfigMaps cache.SharedIndexInformer
	Namespaces cache.SharedIndexInformer
	// Injection returns the current injection configuration (nil when
	// there is none); InjectionSynced (optional) whether it was read.
	// InjectionName names its ConfigMap in messages.
	Injection       func() *inject.Config
	InjectionSynced func() bool
	InjectionName   string
	// Mesh returns the mesh config; ProxyConfigs (optional) the
	// ProxyConfig resources.
	Mesh         func() *meshconfig.MeshConfig
	ProxyConfigs func() *inject.ProxyConfigs
	// SystemNamespace holds the class-default customization ConfigMaps.
	SystemNamespace string
	// Env is shared by every rendering; its KubeVersion is read from the
	// API server when a term starts.
	Env Environment
	// ManualDeployment is ENABLE_GATEWAY_API_MANUAL_DEPLOYMENT (default
	// true): a Gateway whose spec.addresses name a hostname or several
	// addresses is left to its existing deployment.
	ManualDeployment bool
	// Problems receives the problems by Gateway (nil: not reported).
	Problems *diag.Board
}

// Controller renders and applies the objects of every Gateway of an Istio
// class while it runs (Run, one leadership term at a time).
type Controller struct {
	opts Options

	mu       sync.Mutex
	cur      *term
	reported map[string]bool // Gateways with problems on the board

	busy atomic.Int32 // reconciles in progress
}

// term is one run: its caches of generated objects, its queue and the
// cluster's version; a later term starts afresh.
type term struct {
	ctx         context.Context // canceled when the term ends
	queue       workqueue.TypedRateLimitingInterface[string]
	caches      map[*kind]*objectCache
	kubeVersion int
}

// New returns a controller; Run starts it.
func New(opts Options) *Controller {
	return &Controller{opts: opts, reported: map[string]bool{}}
}

// EnqueueAll reconciles every Gateway (after a change of the injection
// configuration, the mesh config or the ProxyConfigs). It does nothing
// while the controller is not running.
func (c *Controller) EnqueueAll() {
	c.mu.Lock()
	t := c.cur
	c.mu.Unlock()
	if t != nil {
		c.enqueueWhere(t, func(config.Config) bool { return true })
	}
}

func (c *Controller) enqueueWhere(t *term, match func(config.Config) bool) {
	for _, g := range c.opts.Gateways.List() {
		if match(g) {
			t.queue.Add(g.Namespace + "/" + g.Name)
		}
	}
}

// Run reconciles until stop closes: every Gateway once, then whatever an
// event touches. It may run again later, never twice at once.
func (c *Controller) Run(stop <-chan struct{}) {
	if !c.waitForInputs(stop) {
		return
	}
	t, factory := c.startTerm(stop)
	if t == nil {
		return
	}
	defer factory.Shutdown()
	regs, unregister := c.watchInputs(t)
	defer unregister()
	c.mu.Lock()
	c.cur = t
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.cur = nil
		c.mu.Unlock()
		c.clearProblems()
	}()
	for _, r := range regs {
		r.WaitUntilSynced(stop)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.ctx = ctx
	go func() {
		<-stop
		cancel()
		t.queue.ShutDown()
	}()
	scope.Infof("generating the Deployments, Services and ServiceAccounts of Gateways (Kubernetes %d)", t.kubeVersion)
	for c.next(t) {
	}
	scope.Infof("stopped generating gateway deployments")
}

func (c *Controller) waitForInputs(stop <-chan struct{}) bool {
	synced := []cache.InformerSynced{c.opts.Gateways.HasSynced}
	for _, col := range []krt.Collection[config.Config]{c.opts.Classes, c.opts.ListenerSets} {
		if col != nil {
			synced = append(synced, col.HasSynced)
		}
	}
	for _, inf := range []cache.SharedIndexInformer{c.opts.ConfigMaps, c.opts.Namespaces} {
		if inf != nil {
			synced = append(synced, inf.HasSynced)
		}
	}
	if c.opts.InjectionSynced != nil {
		synced = append(synced, c.opts.InjectionSynced)
	}
	return cache.WaitForCacheSync(stop, synced...)
}

// startTerm starts the caches of the generated objects (those labeled
// gateway.istio.io/managed, keeping only this manager's field set) and
// reads the API server's version.
func (c *Controller) startTerm(stop <-chan struct{}) (*term, informers.SharedInformerFactory) {
	t := &term{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "gateway-deployment"}),
		caches:      map[*kind]*objectCache{},
		kubeVersion: kubeVersion(c.opts.Kube),
	}
	factory := informers.NewSharedInformerFactoryWithOptions(c.opts.Kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelManaged }),
		informers.WithTransform(keepOwnFields))
	var synced []cache.InformerSynced
	for _, k := range kinds {
		inf := k.informer(factory)
		if _, err := inf.AddEventHandler(ownerHandler(t.queue)); err != nil {
			scope.Errorf("cannot watch %ss: %v", k.name, err)
			t.queue.ShutDown()
			return nil, factory
		}
		t.caches[k] = newObjectCache(inf.GetStore())
		synced = append(synced, inf.HasSynced)
	}
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, synced...) {
		t.queue.ShutDown()
		return nil, factory
	}
	return t, factory
}

// kubeVersion is the API server's version as Istio reads it: major and
// minor concatenated (1.37 is 137), -1 when unknown.
func kubeVersion(c kubernetes.Interface) int {
	v, err := c.Discovery().ServerVersion()
	if err != nil {
		scope.Warnf("cannot read the API server version (%v): templates see KubeVersion -1", err)
		return -1
	}
	n, err := strconv.Atoi(v.Major + v.Minor)
	if err != nil {
		return -1
	}
	return n
}

// keepOwnFields is the transform of the controller's caches: it keeps, of
// the managed fields, only the apply entry of FieldManager (what UpToDate
// reads), and drops kubectl's last-applied annotation.
func keepOwnFields(obj any) (any, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	var keep []metav1.ManagedFieldsEntry
	for _, e := range m.GetManagedFields() {
		if e.Manager == FieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			keep = append(keep, e)
		}
	}
	m.SetManagedFields(keep)
	if a := m.GetAnnotations(); a != nil {
		if _, ok := a["kubectl.kubernetes.io/last-applied-configuration"]; ok {
			cp := make(map[string]string, len(a))
			for k, v := range a {
				if k != "kubectl.kubernetes.io/last-applied-configuration" {
					cp[k] = v
				}
			}
			m.SetAnnotations(cp)
		}
	}
	return obj, nil
}

func (c *Controller) next(t *term) bool {
	key, quit := t.queue.Get()
	if quit {
		return false
	}
	c.busy.Add(1)
	defer c.busy.Add(-1)
	defer t.queue.Done(key)
	if err := c.reconcile(t, key); err != nil {
		if t.queue.NumRequeues(key) < maxRetries {
			scope.Warnf("Gateway %s: %v (retrying)", key, err)
			t.queue.AddRateLimited(key)
			return true
		}
		scope.Errorf("Gateway %s: %v (giving up until it or its objects change)", key, err)
	}
	t.queue.Forget(key)
	return true
}

// idle reports whether no reconcile is in progress.
func (c *Controller) idle() bool { return c.busy.Load() == 0 }

// maxRetries bounds the retries of a failing Gateway, as Istio's 5
// attempts; an event on it or its objects tries again.
const maxRetries = 5
