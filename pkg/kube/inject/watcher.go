package inject

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/meshplane/istiod/pkg/diag"
)

// ConfigMapName is the injector ConfigMap of a revision:
// istio-sidecar-injector, or istio-sidecar-injector-<rev> for a revision
// other than default.
func ConfigMapName(revision string) string {
	if revision == "" || revision == "default" {
		return "istio-sidecar-injector"
	}
	return "istio-sidecar-injector-" + revision
}

// ProblemSource is the /debug/warningz source of the watcher's problems.
const ProblemSource = "injection"

// Watcher holds the injection config of one ConfigMap, live. A version that
// does not parse (broken YAML, a template that fails to parse, a missing
// key) keeps the last good config serving and is reported (Problems, WARN
// log) until a good version replaces it; a deleted ConfigMap also keeps the
// last good config (Istio's webhook keeps its config too).
//
// Config returns an immutable *Config shared by all readers.
type Watcher struct {
	name string

	mu       sync.RWMutex
	current  *Config
	problems []diag.Problem
	handlers []func()

	synced func() bool
}

// NewWatcher returns a watcher fed by Update (no informer; for tests and
// offline use). It counts as synced.
func NewWatcher(name string) *Watcher {
	return &Watcher{name: name, synced: func() bool { return true }}
}

// WatchConfigMap watches namespace/name with an informer restricted to that
// name, until stop closes.
func WatchConfigMap(client kubernetes.Interface, namespace, name string, stop <-chan struct{}) (*Watcher, error) {
	w := &Watcher{name: namespace + "/" + name}
	selector := fields.OneTermEqualSelector(metav1.ObjectNameField, name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return client.CoreV1().ConfigMaps(namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return client.CoreV1().ConfigMaps(namespace).Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &corev1.ConfigMap{}, 0, cache.Indexers{})
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.onObject(o, name) },
		UpdateFunc: func(_, o any) { w.onObject(o, name) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == name {
				w.Update(nil)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("cannot watch ConfigMap %s/%s: %w", namespace, name, err)
	}
	w.synced = func() bool {
		if !reg.HasSynced() {
			return false
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.current == nil && len(w.problems) == 0 {
			// listed and absent
			w.problems = []diag.Problem{w.problem(diag.Error, "the injector ConfigMap does not exist: pods are not injected")}
			scope.Warnf("injection: ConfigMap %s not found: pods are not injected until it exists", w.name)
		}
		return true
	}
	go inf.Run(stop)
	return w, nil
}

func (w *Watcher) onObject(o any, name string) {
	if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == name {
		w.Update(cm)
	}
}

// Update applies a version of the ConfigMap (nil: deleted).
func (w *Watcher) Update(cm *corev1.ConfigMap) {
	cfg, problems := w.parse(cm)
	w.mu.Lock()
	if cfg != nil {
		w.current = cfg
	}
	w.problems = problems
	handlers := append([]func(){}, w.handlers...)
	w.mu.Unlock()
	for _, p := range problems {
		scope.Warnf("injection: ConfigMap %s: %s", w.name, p.Message)
	}
	if cfg != nil {
		scope.Infof("injection: ConfigMap %s applied (templates %v)", w.name, sortedKeys(cfg.RawTemplates))
		for _, h := range handlers {
			h()
		}
	}
}

// parse returns the new config (nil when the version is not usable) and the
// problems to show.
func (w *Watcher) parse(cm *corev1.ConfigMap) (*Config, []diag.Problem) {
	kept := ""
	w.mu.RLock()
	if w.current != nil {
		kept = ", keeping the last good injection config"
	}
	w.mu.RUnlock()
	if cm == nil {
		return nil, []diag.Problem{w.problem(diag.Error, "the injector ConfigMap was deleted"+kept)}
	}
	for _, key := range []string{"config", "values"} {
		if _, ok := cm.Data[key]; !ok {
			return nil, []diag.Problem{w.problem(diag.Error, fmt.Sprintf("missing key %q%s", key, kept))}
		}
	}
	cfg, err := ParseConfig(cm.Data["config"], cm.Data["values"])
	if err != nil {
		return nil, []diag.Problem{w.problem(diag.Error, fmt.Sprintf("invalid injection config%s: %v", kept, err))}
	}
	var out []diag.Problem
	for _, m := range cfg.Warnings() {
		out = append(out, w.problem(diag.Warning, m))
	}
	return cfg, out
}

func (w *Watcher) problem(sev diag.Severity, msg string) diag.Problem {
	return diag.Problem{Severity: sev, Source: ProblemSource, Subject: "ConfigMap " + w.name,
		Object: "ConfigMap " + w.name, Message: msg, Since: time.Now()}
}

// Config returns the current config (nil before a good one was read).
func (w *Watcher) Config() *Config {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.current
}

// HasSynced reports whether the ConfigMap has been listed (and, when it
// exists, read).
func (w *Watcher) HasSynced() bool { return w.synced() }

// Problems returns the current problems of the ConfigMap (a copy).
func (w *Watcher) Problems() []diag.Problem {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return append([]diag.Problem(nil), w.problems...)
}

// AddHandler runs fn after each new good config.
func (w *Watcher) AddHandler(fn func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handlers = append(w.handlers, fn)
}
