package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStripUnusedFields(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		Annotations:   map[string]string{LastAppliedAnnotation: "{}", "keep": "me"}}}
	if _, err := StripUnusedFields(svc); err != nil {
		t.Fatal(err)
	}
	if svc.ManagedFields != nil || len(svc.Annotations) != 1 || svc.Annotations["keep"] != "me" {
		t.Errorf("service after the transform: managedFields %v, annotations %v", svc.ManagedFields, svc.Annotations)
	}

	crd := &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "virtualservices.networking.istio.io"},
		Spec: apiextv1.CustomResourceDefinitionSpec{Versions: []apiextv1.CustomResourceDefinitionVersion{
			{Name: "v1", Served: true, Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object"}},
				AdditionalPrinterColumns: []apiextv1.CustomResourceColumnDefinition{{Name: "Gateways"}}},
			{Name: "v1alpha3", Served: false},
		}},
		Status: apiextv1.CustomResourceDefinitionStatus{Conditions: []apiextv1.CustomResourceDefinitionCondition{
			{Type: apiextv1.Established, Status: apiextv1.ConditionTrue}}},
	}
	if _, err := StripUnusedFields(crd); err != nil {
		t.Fatal(err)
	}
	v := crd.Spec.Versions
	if len(v) != 2 || v[0].Schema != nil || v[0].AdditionalPrinterColumns != nil {
		t.Errorf("CRD versions keep their schemas: %+v", v)
	}
	// what the CRD watcher reads stays
	if v[0].Name != "v1" || !v[0].Served || v[1].Served || len(crd.Status.Conditions) != 1 {
		t.Errorf("CRD lost what the watcher reads: versions %+v, status %+v", v, crd.Status)
	}

	// other shapes pass unchanged
	if out, err := StripUnusedFields("not an object"); err != nil || out != "not an object" {
		t.Errorf("a string became %v, %v", out, err)
	}
}
