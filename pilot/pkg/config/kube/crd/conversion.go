package crd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/resource"
)

// IstioKind is the generic shell of one document: type, metadata, and the raw
// spec and status, decoded later against the kind's schema.
type IstioKind struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              json.RawMessage  `json:"spec,omitempty"`
	Status            *json.RawMessage `json:"status,omitempty"`
}

// GroupVersionKind returns the GVK the document declares.
func (k *IstioKind) GroupVersionKind() config.GroupVersionKind {
	return config.FromKubernetesGVK(k.TypeMeta.GroupVersionKind())
}

// ConvertObject decodes object into a config.Config of the given schema. The
// GVK comes from the schema, so every version alias yields the same key;
// Domain comes from the caller. Unknown fields are dropped; use Convert to
// learn which.
func ConvertObject(s resource.Schema, object *IstioKind, domain string) (*config.Config, error) {
	cfg, _, err := Convert(s, object, domain)
	return cfg, err
}

// Convert is ConvertObject that also returns the paths of dropped unknown
// fields (e.g. "spec.http[0].routez").
func Convert(s resource.Schema, object *IstioKind, domain string) (*config.Config, []string, error) {
	spec, err := s.NewInstance()
	if err != nil {
		return nil, nil, err
	}
	var dropped []string
	if len(object.Spec) > 0 && string(object.Spec) != "null" {
		d, err := config.ApplyJSON(spec, object.Spec)
		if err != nil {
			return nil, nil, prefixPath("spec", err)
		}
		dropped = appendPrefixed(dropped, "spec", d)
	}
	var status config.Status
	if object.Status != nil && len(*object.Status) > 0 && string(*object.Status) != "null" {
		st, err := s.Status()
		if err == nil {
			d, err := config.ApplyJSON(st, *object.Status)
			if err != nil {
				return nil, nil, prefixPath("status", err)
			}
			dropped = appendPrefixed(dropped, "status", d)
			status = st
		}
	}
	m := object.ObjectMeta
	return &config.Config{
		Meta: config.Meta{
			GroupVersionKind:  s.GroupVersionKind(),
			UID:               string(m.UID),
			Name:              m.Name,
			Namespace:         m.Namespace,
			Domain:            domain,
			Labels:            m.Labels,
			Annotations:       m.Annotations,
			ResourceVersion:   m.ResourceVersion,
			CreationTimestamp: m.CreationTimestamp.Time,
			OwnerReferences:   m.OwnerReferences,
			Generation:        m.Generation,
		},
		Spec:   spec,
		Status: status,
	}, dropped, nil
}

func appendPrefixed(dst []string, prefix string, paths []string) []string {
	for _, p := range paths {
		dst = append(dst, prefix+"."+p)
	}
	return dst
}

// prefixPath puts a field prefix in front of located decoding errors.
func prefixPath(prefix string, err error) error {
	var fe *config.FieldError
	if errors.As(err, &fe) {
		return &config.FieldError{Path: joinPath(prefix, fe.Path), Msg: fe.Msg}
	}
	return fmt.Errorf("%s: %v", prefix, err)
}

func joinPath(a, b string) string {
	if b == "" {
		return a
	}
	return a + "." + b
}

var specMarshal = protojson.MarshalOptions{}

// MarshalSpec renders a Spec or Status as compact JSON with object keys in
// sorted order, the shape Kubernetes and Istio's debug output use: proto
// messages with the proto JSON mapping (camelCase names, defaults omitted),
// other types with encoding/json.
func MarshalSpec(v any) (json.RawMessage, error) {
	var raw []byte
	var err error
	if m, ok := v.(proto.Message); ok {
		raw, err = specMarshal.Marshal(m)
	} else {
		raw, err = json.Marshal(v)
	}
	if err != nil {
		return nil, err
	}
	// Round-trip through a generic value: encoding/json sorts map keys.
	var generic any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	return json.Marshal(generic)
}

// ConvertConfig renders cfg in its Kubernetes shape: apiVersion, kind,
// metadata, spec and (when not empty) status.
func ConvertConfig(cfg config.Config) (*IstioKind, error) {
	out := &IstioKind{
		TypeMeta: metav1.TypeMeta{APIVersion: cfg.GroupVersionKind.GroupVersion(), Kind: cfg.GroupVersionKind.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:            cfg.Name,
			Namespace:       cfg.Namespace,
			Labels:          cfg.Labels,
			Annotations:     cfg.Annotations,
			ResourceVersion: cfg.ResourceVersion,
			OwnerReferences: cfg.OwnerReferences,
			Generation:      cfg.Generation,
		},
	}
	out.UID = types.UID(cfg.UID)
	if !cfg.CreationTimestamp.IsZero() {
		out.CreationTimestamp = metav1.NewTime(cfg.CreationTimestamp)
	}
	if cfg.Spec != nil {
		spec, err := MarshalSpec(cfg.Spec)
		if err != nil {
			return nil, fmt.Errorf("%v: spec: %v", cfg.String(), err)
		}
		out.Spec = spec
	}
	if cfg.Status != nil {
		st, err := MarshalSpec(cfg.Status)
		if err != nil {
			return nil, fmt.Errorf("%v: status: %v", cfg.String(), err)
		}
		if s := string(st); s != "{}" && s != "null" {
			out.Status = &st
		}
	}
	return out, nil
}
