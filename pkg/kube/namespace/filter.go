package namespace

import (
	"fmt"
	"sync"

	meshconfig "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/meshplane/istiod/pkg/log"
)

var scope = log.RegisterScope("namespace", "discovery namespace filter")

// DiscoveryFilter answers whether a namespace is watched. With no
// discoverySelectors every namespace is; otherwise a namespace is watched when
// any selector matches its labels. Handlers run when the set changes.
type DiscoveryFilter struct {
	mu        sync.RWMutex
	selectors []labels.Selector
	labels    map[string]map[string]string // namespace -> labels, from the informer
	selected  map[string]bool
	handlers  []func()
	reg       cache.ResourceEventHandlerRegistration // nil when the informer refused the handler
	err       error
}

// NewDiscoveryFilter builds a filter fed by a Namespace informer. If the
// informer refuses the handler (it has stopped) the error is logged and kept
// in Err: the filter then knows no namespace labels, so with selectors only
// cluster-scoped objects pass, and it never syncs.
func NewDiscoveryFilter(namespaces cache.SharedIndexInformer, mesh *meshconfig.MeshConfig) *DiscoveryFilter {
	f := &DiscoveryFilter{labels: map[string]map[string]string{}, selected: map[string]bool{}}
	f.selectors = compile(mesh.GetDiscoverySelectors())
	reg, err := namespaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { f.setNamespace(o, false) },
		UpdateFunc: func(_, o any) { f.setNamespace(o, false) },
		DeleteFunc: func(o any) { f.setNamespace(o, true) },
	})
	if err != nil {
		f.err = fmt.Errorf("cannot watch Namespaces for discoverySelectors: %w", err)
		scope.Errorf("%v; with selectors no namespace is selected", f.err)
		return f
	}
	f.reg = reg
	return f
}

// Err is why namespaces are not watched (nil when they are).
func (f *DiscoveryFilter) Err() error { return f.err }

// HasSynced reports whether the informer's initial namespaces have reached
// the filter. It is never true when namespaces are not watched.
func (f *DiscoveryFilter) HasSynced() bool { return f.reg != nil && f.reg.HasSynced() }

func compile(sels []*meshconfig.LabelSelector) []labels.Selector {
	var out []labels.Selector
	for _, s := range sels {
		ls := &metav1.LabelSelector{MatchLabels: s.GetMatchLabels()}
		for _, e := range s.GetMatchExpressions() {
			ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{
				Key: e.GetKey(), Operator: metav1.LabelSelectorOperator(e.GetOperator()), Values: e.GetValues()})
		}
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			scope.Warnf("invalid discoverySelector %v: %v", s, err)
			continue
		}
		out = append(out, sel)
	}
	return out
}

func (f *DiscoveryFilter) setNamespace(o any, deleted bool) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	ns, ok := o.(*corev1.Namespace)
	if !ok {
		return
	}
	f.mu.Lock()
	if deleted {
		delete(f.labels, ns.Name)
	} else {
		f.labels[ns.Name] = ns.Labels
	}
	changed := f.recomputeLocked()
	f.mu.Unlock()
	if changed {
		f.notify()
	}
}

// SetMesh applies new discoverySelectors.
func (f *DiscoveryFilter) SetMesh(mesh *meshconfig.MeshConfig) {
	f.mu.Lock()
	f.selectors = compile(mesh.GetDiscoverySelectors())
	changed := f.recomputeLocked()
	f.mu.Unlock()
	if changed {
		f.notify()
	}
}

func (f *DiscoveryFilter) recomputeLocked() bool {
	next := map[string]bool{}
	for ns, l := range f.labels {
		if f.matchLocked(l) {
			next[ns] = true
		}
	}
	changed := len(next) != len(f.selected)
	if !changed {
		for ns := range next {
			if !f.selected[ns] {
				changed = true
				break
			}
		}
	}
	f.selected = next
	return changed
}

func (f *DiscoveryFilter) matchLocked(l map[string]string) bool {
	if len(f.selectors) == 0 {
		return true
	}
	set := labels.Set(l)
	for _, s := range f.selectors {
		if s.Matches(set) {
			return true
		}
	}
	return false
}

// Filter reports whether objects of namespace ns are watched. Cluster-scoped
// objects (ns == "") always are. Without selectors every namespace is, even
// one the informer has not seen yet.
func (f *DiscoveryFilter) Filter(ns string) bool {
	if ns == "" {
		return true
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if len(f.selectors) == 0 {
		return true
	}
	return f.selected[ns]
}

// AddHandler registers fn to run after the set of watched namespaces changes.
func (f *DiscoveryFilter) AddHandler(fn func()) {
	f.mu.Lock()
	f.handlers = append(f.handlers, fn)
	f.mu.Unlock()
}

func (f *DiscoveryFilter) notify() {
	f.mu.RLock()
	hs := append([]func(){}, f.handlers...)
	f.mu.RUnlock()
	for _, h := range hs {
		h()
	}
}
