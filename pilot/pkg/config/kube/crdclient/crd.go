package crdclient

import (
	"sync"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/meshplane/istiod/pkg/config/schema/gvr"
	"github.com/meshplane/istiod/pkg/config/schema/resource"
	"github.com/meshplane/istiod/pkg/kube"
)

// crdWatcher tracks which CRDs are established and serve the version a kind
// is read at, and reports kinds becoming ready.
type crdWatcher struct {
	client kube.Client
	stop   <-chan struct{}

	mu       sync.Mutex
	ready    map[string]bool // CRD name -> established and serving the wanted version
	synced   bool
	schemas  map[string]resource.Schema // CRD name -> kind
	onReady  func(s resource.Schema, initial bool)
	informed map[string]bool // kinds already reported
	err      error           // why CRDs are not watched, if they are not
}

func newCRDWatcher(client kube.Client) *crdWatcher {
	return &crdWatcher{client: client, ready: map[string]bool{}, schemas: map[string]resource.Schema{}, informed: map[string]bool{}}
}

// run starts the CRD informer, waits for its initial list, and reports every
// kind whose CRD is ready (initial=true); later CRDs are reported as they
// become established (initial=false).
func (w *crdWatcher) run(stop <-chan struct{}, onReady func(resource.Schema, bool)) {
	w.stop = stop
	w.onReady = onReady
	inf, err := w.client.Informer(gvr.CustomResourceDefinition)
	if err != nil {
		w.fail(err)
		return
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, o any) { w.observe(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if crd, ok := o.(*apiextv1.CustomResourceDefinition); ok {
				w.mu.Lock()
				delete(w.ready, crd.Name)
				w.mu.Unlock()
			}
		},
	})
	if err != nil {
		// the informer was stopped already: no CRD is ever seen
		w.fail(err)
		return
	}
	w.client.Start(stop)
	// the handler's sync, not the informer's: the initial CRDs must have
	// reached observe before the ready ones are reported as initial
	if !cache.WaitForCacheSync(stop, reg.HasSynced) {
		return
	}
	w.mu.Lock()
	w.synced = true
	var now []resource.Schema
	for name := range w.ready {
		if s, ok := w.schemas[name]; ok && !w.informed[name] {
			w.informed[name] = true
			now = append(now, s)
		}
	}
	w.mu.Unlock()
	for _, s := range now {
		onReady(s, true)
	}
}

// fail records and logs why CRDs cannot be watched; the kinds they back
// then stay empty.
func (w *crdWatcher) fail(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	scope.Errorf("cannot watch CustomResourceDefinitions, Istio and Gateway API kinds stay empty: %v", err)
}

// register makes the watcher report a kind.
func (w *crdWatcher) register(s resource.Schema) {
	w.mu.Lock()
	w.schemas[crdName(s)] = s
	w.mu.Unlock()
}

func (w *crdWatcher) known(s resource.Schema) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ready[crdName(s)]
}

func (w *crdWatcher) observe(o any) {
	crd, ok := o.(*apiextv1.CustomResourceDefinition)
	if !ok {
		return
	}
	w.mu.Lock()
	s, wanted := w.schemas[crd.Name]
	if !wanted || !established(crd) || !serves(crd, s.Version()) {
		w.mu.Unlock()
		return
	}
	w.ready[crd.Name] = true
	report := w.synced && !w.informed[crd.Name]
	if report {
		w.informed[crd.Name] = true
	}
	w.mu.Unlock()
	if report {
		w.onReady(s, false)
	}
}

func established(crd *apiextv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue {
			return true
		}
	}
	return false
}

func serves(crd *apiextv1.CustomResourceDefinition, version string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Served {
			return true
		}
	}
	scope.Warnf("CRD %s does not serve version %s; its objects are not read", crd.Name, version)
	return false
}
