package config

import (
	"fmt"
	"reflect"
	"time"

	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// RevisionLabel is the label that pins an object to one control-plane revision.
const RevisionLabel = "istio.io/rev"

// GroupVersionKind names a kind of configuration. Group is empty for the core
// Kubernetes API group.
type GroupVersionKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// String renders the GVK as group/version/kind, with "core" for the empty group.
func (g GroupVersionKind) String() string {
	grp := g.Group
	if grp == "" {
		grp = "core"
	}
	return grp + "/" + g.Version + "/" + g.Kind
}

// GroupVersion renders the apiVersion of the GVK ("v1" for the core group).
func (g GroupVersionKind) GroupVersion() string {
	if g.Group == "" {
		return g.Version
	}
	return g.Group + "/" + g.Version
}

// FromKubernetesGVK converts an apimachinery GVK.
func FromKubernetesGVK(g schema.GroupVersionKind) GroupVersionKind {
	return GroupVersionKind{Group: g.Group, Version: g.Version, Kind: g.Kind}
}

// Kubernetes returns the apimachinery form of the GVK.
func (g GroupVersionKind) Kubernetes() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: g.Group, Version: g.Version, Kind: g.Kind}
}

// Spec is the desired state of an object: a proto message for Istio kinds, a
// Kubernetes struct for builtin and Gateway API kinds.
type Spec any

// Status is the observed state of an object, typed like Spec.
type Status any

// Meta is everything about an object except what it says.
type Meta struct {
	GroupVersionKind  GroupVersionKind        `json:"type,omitempty"`
	UID               string                  `json:"uid,omitempty"`
	Name              string                  `json:"name,omitempty"`
	Namespace         string                  `json:"namespace,omitempty"`
	Domain            string                  `json:"domain,omitempty"`
	Labels            map[string]string       `json:"labels,omitempty"`
	Annotations       map[string]string       `json:"annotations,omitempty"`
	ResourceVersion   string                  `json:"resourceVersion,omitempty"`
	CreationTimestamp time.Time               `json:"creationTimestamp,omitempty"`
	OwnerReferences   []metav1.OwnerReference `json:"ownerReferences,omitempty"`
	Generation        int64                   `json:"generation,omitempty"`
}

// Config is one configuration object as the control plane holds it. Once it
// leaves a store it is immutable: callers that want to change it DeepCopy it.
type Config struct {
	Meta
	Spec   Spec           `json:"spec,omitempty"`
	Status Status         `json:"status,omitempty"`
	Extra  map[string]any `json:"extra,omitempty"`
}

// Key is the identity of an object across kinds: group/version/kind/namespace/name.
func Key(group, version, kind, name, namespace string) string {
	return group + "/" + version + "/" + kind + "/" + namespace + "/" + name
}

// Key returns the identity of the object the Meta describes.
func (m *Meta) Key() string {
	return Key(m.GroupVersionKind.Group, m.GroupVersionKind.Version, m.GroupVersionKind.Kind, m.Name, m.Namespace)
}

// NamespacedName returns the Kubernetes namespace/name of the object.
func (m *Meta) NamespacedName() types.NamespacedName {
	return types.NamespacedName{Namespace: m.Namespace, Name: m.Name}
}

// LabelsInRevision reports whether an object with these labels belongs to
// revision rev: objects without the revision label belong to every revision,
// a control plane without a revision takes every object, otherwise the label
// must equal rev.
func LabelsInRevision(labels map[string]string, rev string) bool {
	v, ok := labels[RevisionLabel]
	if !ok || rev == "" {
		return true
	}
	return v == rev
}

// DeepCopy returns a copy of c that shares no mutable memory with it.
func (c Config) DeepCopy() Config {
	out := c
	out.Labels = copyStringMap(c.Labels)
	out.Annotations = copyStringMap(c.Annotations)
	if c.OwnerReferences != nil {
		out.OwnerReferences = make([]metav1.OwnerReference, len(c.OwnerReferences))
		for i := range c.OwnerReferences {
			c.OwnerReferences[i].DeepCopyInto(&out.OwnerReferences[i])
		}
	}
	out.Spec = DeepCopyValue(c.Spec)
	out.Status = DeepCopyValue(c.Status)
	if c.Extra != nil {
		out.Extra = make(map[string]any, len(c.Extra))
		for k, v := range c.Extra {
			out.Extra[k] = DeepCopyValue(v)
		}
	}
	return out
}

// DeepCopyValue copies a Spec, Status or Extra value: proto messages with
// proto.Clone, Kubernetes types with their DeepCopy method, scalars as is.
// Values of other types are returned unchanged and must be immutable.
func DeepCopyValue(v any) any {
	if v == nil {
		return nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return v
	}
	if m, ok := v.(proto.Message); ok {
		return proto.Clone(m)
	}
	rv := reflect.ValueOf(v)
	if meth := rv.MethodByName("DeepCopy"); meth.IsValid() && meth.Type().NumIn() == 0 && meth.Type().NumOut() == 1 {
		return meth.Call(nil)[0].Interface()
	}
	switch t := v.(type) {
	case map[string]string:
		return copyStringMap(t)
	case []string:
		return append([]string(nil), t...)
	}
	return v
}

// Equals reports whether two configs are the same object in the same state.
func (c Config) Equals(other Config) bool {
	if !reflect.DeepEqual(c.Meta, other.Meta) {
		return false
	}
	if !valuesEqual(c.Spec, other.Spec) || !valuesEqual(c.Status, other.Status) {
		return false
	}
	if len(c.Extra) != len(other.Extra) {
		return false
	}
	for k, v := range c.Extra {
		ov, ok := other.Extra[k]
		if !ok || !valuesEqual(v, ov) {
			return false
		}
	}
	return true
}

func valuesEqual(a, b any) bool {
	am, aok := a.(proto.Message)
	bm, bok := b.(proto.Message)
	if aok && bok {
		return proto.Equal(am, bm)
	}
	return reflect.DeepEqual(a, b)
}

func copyStringMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// String names the object for messages: Kind namespace/name.
func (c Config) String() string {
	if c.Namespace == "" {
		return fmt.Sprintf("%s %s", c.GroupVersionKind.Kind, c.Name)
	}
	return fmt.Sprintf("%s %s/%s", c.GroupVersionKind.Kind, c.Namespace, c.Name)
}
