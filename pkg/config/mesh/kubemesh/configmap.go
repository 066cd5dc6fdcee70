package kubemesh

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/log"
)

var scope = log.RegisterScope("mesh", "mesh config")

// ConfigMapSource watches one ConfigMap and exposes some of its keys as
// mesh sources (a missing ConfigMap or key is a missing source).
type ConfigMapSource struct {
	name     string
	informer cache.SharedIndexInformer
	keys     map[string]*mesh.StaticSource
	reg      cache.ResourceEventHandlerRegistration // nil when the informer refused the handler
	err      error
}

// ConfigMapName is the mesh ConfigMap of a revision: istio or istio-<rev>.
func ConfigMapName(revision string) string {
	if revision == "" || revision == "default" {
		return "istio"
	}
	return "istio-" + revision
}

// NewConfigMapSource starts watching namespace/name until stop closes; keys
// are the data keys exposed (e.g. "mesh", "meshNetworks").
func NewConfigMapSource(client kubernetes.Interface, namespace, name string, stop <-chan struct{}, keys ...string) *ConfigMapSource {
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
	return newConfigMapSource(inf, namespace, name, stop, keys...)
}

// newConfigMapSource feeds the keys from an informer of the ConfigMap and
// runs it until stop closes.
func newConfigMapSource(inf cache.SharedIndexInformer, namespace, name string, stop <-chan struct{}, keys ...string) *ConfigMapSource {
	s := &ConfigMapSource{
		name:     name,
		informer: inf,
		keys:     map[string]*mesh.StaticSource{},
	}
	for _, k := range keys {
		s.keys[k] = mesh.NewStaticSource("ConfigMap "+namespace+"/"+name+" key "+k, nil)
	}
	reg, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { s.set(o) },
		UpdateFunc: func(_, o any) { s.set(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == s.name {
				s.set(nil)
			}
		},
	})
	if err != nil {
		// the keys stay missing sources: the mesh config keeps its defaults
		s.err = fmt.Errorf("cannot watch ConfigMap %s/%s: %w", namespace, name, err)
		scope.Errorf("%v; its keys are treated as missing", s.err)
		return s
	}
	s.reg = reg
	go s.informer.Run(stop)
	return s
}

func (s *ConfigMapSource) set(o any) {
	cm, _ := o.(*corev1.ConfigMap)
	if cm != nil && cm.Name != s.name {
		return // the field selector already filters; this guards clients that ignore it
	}
	for k, src := range s.keys {
		if cm == nil {
			src.Set(nil)
			continue
		}
		v, ok := cm.Data[k]
		if !ok {
			src.Set(nil)
			continue
		}
		src.Set(&v)
	}
}

// Key returns the source of one data key (nil when not watched).
func (s *ConfigMapSource) Key(k string) mesh.Source {
	if src, ok := s.keys[k]; ok {
		return src
	}
	return nil
}

// Err is why the ConfigMap is not watched (nil when it is).
func (s *ConfigMapSource) Err() error { return s.err }

// HasSynced reports whether the initial state has been read and handed to
// the key sources. It is never true when the ConfigMap is not watched.
func (s *ConfigMapSource) HasSynced() bool { return s.reg != nil && s.reg.HasSynced() }

// WaitUntilSynced blocks until the initial state has been read and handed to
// the key sources, or stop closes. It returns false at once when the
// ConfigMap is not watched (see Err).
func (s *ConfigMapSource) WaitUntilSynced(stop <-chan struct{}) bool {
	if s.reg == nil {
		return false
	}
	return cache.WaitForCacheSync(stop, s.reg.HasSynced)
}
