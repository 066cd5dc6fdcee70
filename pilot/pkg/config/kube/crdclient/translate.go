package crdclient

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pkg/config"
)

// TranslateObject turns a typed object of a stored kind into a config.Config
// whose Spec and Status point into obj (read-only).
func TranslateObject(obj runtime.Object, g config.GroupVersionKind, domain string) (config.Config, error) {
	f, ok := translationMap[g]
	if !ok {
		return config.Config{}, fmt.Errorf("unknown type %v", g)
	}
	cfg := f(obj)
	cfg.Domain = domain
	return cfg, nil
}

// ToObject builds the typed Kubernetes object of cfg for a write. It fails
// with "nil spec for <name>/<namespace>" when cfg has no Spec.
func ToObject(cfg config.Config) (runtime.Object, error) {
	f, ok := objectMap[cfg.GroupVersionKind]
	if !ok {
		return nil, fmt.Errorf("unknown type %v", cfg.GroupVersionKind)
	}
	return f(cfg)
}

func setObjectMeta(om *metav1.ObjectMeta, cfg config.Config) {
	om.Name = cfg.Name
	om.Namespace = cfg.Namespace
	om.Labels = cfg.Labels
	om.Annotations = cfg.Annotations
	om.ResourceVersion = cfg.ResourceVersion
	om.OwnerReferences = cfg.OwnerReferences
	om.UID = types.UID(cfg.UID)
	om.Generation = cfg.Generation
	if !cfg.CreationTimestamp.IsZero() {
		om.CreationTimestamp = metav1.NewTime(cfg.CreationTimestamp)
	}
}
