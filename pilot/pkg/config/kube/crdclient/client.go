package crdclient

import (
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/meshplane/istiod/pilot/pkg/config/storeview"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/resource"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/log"
	"github.com/meshplane/istiod/pkg/monitoring"
)

var scope = log.RegisterScope("kube", "Kubernetes config client")

// Options configure the CRD client.
type Options struct {
	// Revision: objects whose istio.io/rev label names another revision are
	// ignored (Gateway API Gateways never are).
	Revision string
	// DomainSuffix is set as Domain on every config.
	DomainSuffix string
	// NamespaceFilter, when set, decides which namespaces are watched.
	NamespaceFilter NamespaceFilter
	// Krt registers collections for /debug/krtz (may be nil).
	Krt *krt.DebugHandler
	// SyncLogInterval is how often waiting kinds are logged (default 5s).
	SyncLogInterval time.Duration
	// Problems receives the objects that fail validation (may be nil).
	Problems *diag.Board
	// LastGood locates the record that shares kept versions between
	// replicas (see lastgood.go); empty: kept in memory only.
	LastGood LastGoodOptions
}

// NamespaceFilter is the discovery namespace filter.
type NamespaceFilter interface {
	Filter(ns string) bool
	AddHandler(func())
}

// Client is a ConfigStoreController over typed informers, one per kind. Kinds
// backed by a CRD start empty and synced when the CRD is absent, and start
// their informer when the CRD appears.
type Client struct {
	*storeview.View
	client kube.Client
	opts   Options
	kinds  map[config.GroupVersionKind]*kindState
	order  collection.Schemas
	crds   *crdWatcher
	stop   chan struct{}
	// lastGood is the shared record of kept versions (nil: none)
	lastGood *lastGood
}

var _ model.ConfigStoreController = (*Client)(nil)

// kindState is one kind: its output collection and, once ready, its informer.
type kindState struct {
	cl         *Client
	schema     resource.Schema
	collection krt.StaticCollection[config.Config]

	// events serialises the collection's writers: the informer's handlers
	// (upsert, remove) and the namespace refilter, which holds it from the
	// list of the informer's store to the reset of the collection, so that
	// no event lands in between and is undone by the older list
	events sync.Mutex

	// served closes when the informer has synced (see KindServed)
	served chan struct{}

	mu       sync.Mutex
	informer cache.SharedIndexInformer // nil while the CRD is absent
	synced   bool
	// rejected holds, by key, the reason an object's current version is
	// refused (it is logged once per object and reason), rejectedUID the
	// UID of that object
	rejected    map[string]string
	rejectedUID map[string]string

	// hooks for internal tests (nil otherwise): refilterListed runs
	// between the refilter's list and its reset; eventWaits runs when a
	// handler is about to take events
	refilterListed func()
	eventWaits     func(o any)
}

// New builds a client for the schemas. Synthetic kinds are skipped.
func New(client kube.Client, schemas collection.Schemas, opts Options) (*Client, error) {
	if opts.SyncLogInterval <= 0 {
		opts.SyncLogInterval = 5 * time.Second
	}
	cl := &Client{View: storeview.New(), client: client, opts: opts, kinds: map[config.GroupVersionKind]*kindState{}, stop: make(chan struct{})}
	b := collection.NewSchemasBuilder()
	for _, s := range schemas.All() {
		if s.IsSynthetic() {
			scope.Debugf("excluded synthetic kind %s from watching", s.Identifier())
			continue
		}
		if _, ok := translationMap[s.GroupVersionKind()]; !ok {
			return nil, fmt.Errorf("no translation for %v", s.GroupVersionKind())
		}
		_ = b.Add(s)
		kopts := []krt.CollectionOption{krt.WithName("crdclient/" + s.Kind()), krt.Unsynced(), krt.WithStop(cl.stop)}
		if opts.Krt != nil {
			kopts = append(kopts, krt.WithDebugging(opts.Krt))
		}
		c := krt.NewStaticCollection[config.Config](nil, kopts...)
		cl.kinds[s.GroupVersionKind()] = &kindState{cl: cl, schema: s, collection: c, rejected: map[string]string{},
			rejectedUID: map[string]string{}, served: make(chan struct{})}
		cl.Add(s.GroupVersionKind(), c)
	}
	cl.order = b.Build()
	cl.lastGood = newLastGood(cl, opts.LastGood)
	cl.crds = newCRDWatcher(client)
	for _, s := range cl.order.All() {
		if !s.IsBuiltin() {
			cl.crds.register(s)
		}
	}
	if opts.NamespaceFilter != nil {
		opts.NamespaceFilter.AddHandler(cl.refilterAll)
	}
	return cl, nil
}

// Schemas returns the watched kinds.
func (cl *Client) Schemas() collection.Schemas { return cl.order }

// KindServed returns a channel that closes once the API server serves
// the kind and its informer has listed it: soon after Run for a builtin
// kind, once its CRD is established for the others (never while the CRD
// is absent, so a writer waiting on it writes nothing in vain). For a kind
// the client does not watch it never closes.
func (cl *Client) KindServed(g config.GroupVersionKind) <-chan struct{} {
	if k, ok := cl.kinds[g]; ok {
		return k.served
	}
	return make(chan struct{})
}

// HasSynced reports whether every kind has synced.
func (cl *Client) HasSynced() bool { return cl.CollectionsSynced() }

// Run starts the informers and blocks until stop closes.
func (cl *Client) Run(stop <-chan struct{}) {
	defer close(cl.stop)
	t0 := time.Now()
	scope.Infof("Starting Pilot K8S CRD controller")
	if cl.lastGood != nil {
		cl.lastGood.start(stop) // read before any kind is listed
	}
	for _, k := range cl.kinds {
		if k.schema.IsBuiltin() {
			k.start(stop)
		}
	}
	cl.crds.run(stop, cl.onCRDReady)
	for _, k := range cl.kinds {
		if !k.schema.IsBuiltin() && !cl.crds.known(k.schema) {
			scope.Debugf("%s is not ready now, building delayed client", crdName(k.schema))
			k.collection.MarkSynced()
		}
	}
	cl.client.Start(stop)
	if cl.waitForSync(stop) {
		scope.Infof("Pilot K8S CRD controller synced in %v", time.Since(t0).Round(time.Millisecond))
	}
	<-stop
}

// onCRDReady starts the informer of a kind whose CRD became established.
func (cl *Client) onCRDReady(s resource.Schema, initial bool) {
	k, ok := cl.kinds[s.GroupVersionKind()]
	if !ok || k.schema.IsBuiltin() {
		return
	}
	if k.start(cl.crds.stop) && !initial {
		scope.Infof("%s is now ready, building client", crdName(s))
		cl.client.Start(cl.crds.stop)
	}
}

func (cl *Client) waitForSync(stop <-chan struct{}) bool {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	lastLog := time.Now()
	for {
		pending := ""
		for _, s := range cl.order.All() {
			if !cl.kinds[s.GroupVersionKind()].collection.HasSynced() {
				pending = s.Kind()
				break
			}
		}
		if pending == "" {
			return true
		}
		if time.Since(lastLog) >= cl.opts.SyncLogInterval {
			scope.Infof("controller %q is syncing...", pending)
			lastLog = time.Now()
		}
		select {
		case <-stop:
			scope.Errorf("Failed to sync Pilot K8S CRD controller cache")
			return false
		case <-tick.C:
		}
	}
}

// start creates the kind's informer and handlers once; it reports whether it
// did so now.
func (k *kindState) start(stop <-chan struct{}) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.informer != nil {
		return false
	}
	inf, err := k.cl.client.Informer(k.schema.GroupVersionResource())
	if err != nil {
		scope.Errorf("cannot build informer for %s: %v", k.schema.Kind(), err)
		k.collection.MarkSynced()
		return false
	}
	k.informer = inf
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { k.upsert(o, "add") },
		UpdateFunc: func(_, o any) { k.upsert(o, "update") },
		DeleteFunc: k.remove,
	})
	if err != nil {
		scope.Errorf("cannot watch %s: %v", k.schema.Kind(), err)
		k.collection.MarkSynced()
		return false
	}
	go func() {
		if cache.WaitForCacheSync(stop, reg.HasSynced) {
			k.collection.MarkSynced()
			close(k.served)
		}
	}()
	return true
}

// accept applies the revision and namespace filters.
func (k *kindState) accept(obj metav1.Object) bool {
	if k.cl.opts.NamespaceFilter != nil && !k.cl.opts.NamespaceFilter.Filter(obj.GetNamespace()) {
		return false
	}
	if k.schema.GroupVersionKind() == gvk.KubernetesGateway {
		return true // Gateway API Gateways are shared by controllers: never revision-filtered
	}
	return config.LabelsInRevision(obj.GetLabels(), k.cl.opts.Revision)
}

func (k *kindState) translate(o any) (config.Config, metav1.Object, bool) {
	ro, ok := o.(runtime.Object)
	if !ok {
		return config.Config{}, nil, false
	}
	mo, ok := o.(metav1.Object)
	if !ok {
		return config.Config{}, nil, false
	}
	cfg, err := TranslateObject(ro, k.schema.GroupVersionKind(), k.cl.opts.DomainSuffix)
	if err != nil {
		scope.Warnf("%v", err)
		return config.Config{}, nil, false
	}
	return cfg, mo, true
}

// lockEvents takes events for a handler of o.
func (k *kindState) lockEvents(o any) {
	if k.eventWaits != nil {
		k.eventWaits(o)
	}
	k.events.Lock()
}

func (k *kindState) upsert(o any, event string) {
	k.lockEvents(o)
	defer k.events.Unlock()
	cfg, mo, ok := k.translate(o)
	if !ok {
		return
	}
	if !k.accept(mo) {
		// an update may move an object out of scope (label or namespace change)
		if k.collection.GetKey(objectKey(mo)) != nil {
			k.collection.Delete(objectKey(mo))
			monitoring.ConfigEvents.WithLabelValues(k.schema.Kind(), "delete").Inc()
		}
		k.forget(objectKey(mo))
		return
	}
	if !k.validate(cfg) {
		k.serveRecorded(objectKey(mo), cfg.UID)
		return
	}
	k.collection.Set(cfg)
	monitoring.ConfigEvents.WithLabelValues(k.schema.Kind(), event).Inc()
}

func (k *kindState) remove(o any) {
	k.lockEvents(o)
	defer k.events.Unlock()
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	mo, ok := o.(metav1.Object)
	if !ok {
		return
	}
	k.forget(objectKey(mo))
	if k.collection.GetKey(objectKey(mo)) != nil {
		k.collection.Delete(objectKey(mo))
		monitoring.ConfigEvents.WithLabelValues(k.schema.Kind(), "delete").Inc()
	}
}

// refilter recomputes the kind's content from its informer cache, after the
// set of watched namespaces changed. It runs on the namespace filter's
// goroutine; holding events keeps the informer's handlers out from the
// list to the reset. An event whose object the store already held when
// listed is applied after the reset, once more, to the same effect.
func (k *kindState) refilter() {
	k.events.Lock()
	defer k.events.Unlock()
	k.mu.Lock()
	inf := k.informer
	k.mu.Unlock()
	if inf == nil {
		return
	}
	objs := inf.GetStore().List()
	if k.refilterListed != nil {
		k.refilterListed()
	}
	var out []config.Config
	for _, o := range objs {
		cfg, mo, ok := k.translate(o)
		if !ok || !k.accept(mo) {
			if ok {
				k.forget(objectKey(mo))
			}
			continue
		}
		if k.validate(cfg) {
			out = append(out, cfg)
		} else if rec, ok := k.cl.lastGood.lookup(k.schema.GroupVersionKind(), configKey(cfg), cfg.UID); ok {
			out = append(out, rec) // the version the record keeps
		} else if prev := k.collection.GetKey(configKey(cfg)); prev != nil {
			out = append(out, *prev) // the last good version keeps serving
		}
	}
	k.collection.Reset(out)
}

func (cl *Client) refilterAll() {
	for _, k := range cl.kinds {
		k.refilter()
	}
}

func objectKey(o metav1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

func crdName(s resource.Schema) string { return s.Plural() + "." + s.Group() }
