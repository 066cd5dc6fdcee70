package krt

import (
	"fmt"
	"reflect"
	"strings"

	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pkg/config"
)

// This file decides, once per collection, how objects of a type are keyed and
// compared, and how filters read their namespace, labels and selector.

var (
	resourceNamerType = reflect.TypeFor[ResourceNamer]()
	metaObjectType    = reflect.TypeFor[metav1.Object]()
	protoMessageType  = reflect.TypeFor[proto.Message]()
	configType        = reflect.TypeFor[config.Config]()
	configPtrType     = reflect.TypeFor[*config.Config]()
)

type equaler[T any] interface {
	Equals(T) bool
}

// namespacedKey renders namespace/name, or name for cluster-scoped objects.
func namespacedKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// keyFuncFor returns the key function of T: ResourceName() when T or *T
// implements ResourceNamer, else namespace/name for config.Config and
// metav1.Object. It panics when T has none of these.
func keyFuncFor[T any]() func(T) string {
	t := reflect.TypeFor[T]()
	switch {
	case t.Implements(resourceNamerType):
		return func(o T) string { return any(o).(ResourceNamer).ResourceName() }
	case t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(resourceNamerType):
		return func(o T) string { return any(&o).(ResourceNamer).ResourceName() }
	case t == configType:
		return func(o T) string { c := any(o).(config.Config); return namespacedKey(c.Namespace, c.Name) }
	case t == configPtrType:
		return func(o T) string { c := any(o).(*config.Config); return namespacedKey(c.Namespace, c.Name) }
	case t.Implements(metaObjectType):
		return func(o T) string { m := any(o).(metav1.Object); return namespacedKey(m.GetNamespace(), m.GetName()) }
	case t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(metaObjectType):
		return func(o T) string { m := any(&o).(metav1.Object); return namespacedKey(m.GetNamespace(), m.GetName()) }
	}
	panic(fmt.Sprintf("krt: no key for type %v: implement ResourceNamer (ResourceName() string) "+
		"on it, or use a metav1.Object or config.Config", t))
}

// equalFuncFor returns how two T are compared: Equals(T) bool when T or *T
// has it, proto.Equal for proto messages, else reflect.DeepEqual.
func equalFuncFor[T any]() func(a, b T) bool {
	t := reflect.TypeFor[T]()
	eq := reflect.TypeFor[equaler[T]]()
	switch {
	case t.Implements(eq):
		return func(a, b T) bool { return any(a).(equaler[T]).Equals(b) }
	case t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(eq):
		return func(a, b T) bool { return any(&a).(equaler[T]).Equals(b) }
	case t.Implements(protoMessageType):
		return func(a, b T) bool { return proto.Equal(any(a).(proto.Message), any(b).(proto.Message)) }
	}
	return func(a, b T) bool { return reflect.DeepEqual(a, b) }
}

// informerEqualFor compares Kubernetes objects from an informer by
// resourceVersion and generation when both have a resourceVersion: the API
// server changes it on every write. Other types fall back to equalFuncFor.
func informerEqualFor[T any]() func(a, b T) bool {
	fallback := equalFuncFor[T]()
	if !reflect.TypeFor[T]().Implements(metaObjectType) {
		return fallback
	}
	return func(a, b T) bool {
		ma, mb := any(a).(metav1.Object), any(b).(metav1.Object)
		if ma.GetResourceVersion() != "" && mb.GetResourceVersion() != "" {
			return ma.GetResourceVersion() == mb.GetResourceVersion() && ma.GetGeneration() == mb.GetGeneration()
		}
		return fallback(a, b)
	}
}

// as returns o (or &o) as the interface I.
func as[I any, T any](o *T) (I, bool) {
	if i, ok := any(*o).(I); ok {
		return i, true
	}
	i, ok := any(o).(I)
	return i, ok
}

type namespacer interface{ GetNamespace() string }

type labeler interface{ GetLabels() map[string]string }

// namespaceOf returns the namespace of o: GetNamespace() when present (all
// metav1.Objects), Namespace for config.Config, else the part of key before
// the first "/" (empty when the key has none).
func namespaceOf[T any](o T, key string) string {
	switch c := any(o).(type) {
	case config.Config:
		return c.Namespace
	case *config.Config:
		return c.Namespace
	}
	if n, ok := as[namespacer](&o); ok {
		return n.GetNamespace()
	}
	if ns, _, ok := strings.Cut(key, "/"); ok {
		return ns
	}
	return ""
}

// labelsOf returns the labels of o: GetLabels() (metav1.Object) or
// config.Config's Labels; nil otherwise.
func labelsOf[T any](o T) map[string]string {
	switch c := any(o).(type) {
	case config.Config:
		return c.Labels
	case *config.Config:
		return c.Labels
	}
	if l, ok := as[labeler](&o); ok {
		return l.GetLabels()
	}
	return nil
}

// selectorOf returns the selector of o (or &o) through LabelSelectorer; nil
// otherwise.
func selectorOf[T any](o T) map[string]string {
	if s, ok := as[LabelSelectorer](&o); ok {
		return s.GetSelector()
	}
	return nil
}
