package kube

import (
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

// LastAppliedAnnotation is written by `kubectl apply`; it repeats the whole
// object and is never read by the control plane.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// StripUnusedFields is the informer transform: it drops managedFields and the
// last-applied annotation before objects are cached, which is most of the
// memory of small objects, and the OpenAPI schemas and printer columns of
// CustomResourceDefinitions (the control plane reads only which versions
// are served and whether the CRD is established; the schemas of Istio's and
// Gateway API's CRDs are about 4 MiB). Objects of other shapes pass
// unchanged.
func StripUnusedFields(obj any) (any, error) {
	if crd, ok := obj.(*apiextv1.CustomResourceDefinition); ok {
		for i := range crd.Spec.Versions {
			v := &crd.Spec.Versions[i]
			v.Schema, v.AdditionalPrinterColumns = nil, nil
		}
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil
	}
	m.SetManagedFields(nil)
	if ann := m.GetAnnotations(); ann != nil {
		if _, ok := ann[LastAppliedAnnotation]; ok {
			cp := make(map[string]string, len(ann)-1)
			for k, v := range ann {
				if k != LastAppliedAnnotation {
					cp[k] = v
				}
			}
			if len(cp) == 0 {
				cp = nil
			}
			m.SetAnnotations(cp)
		}
	}
	return obj, nil
}
