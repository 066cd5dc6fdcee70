package crdclient_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crdclient"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// A kind is served once its CRD is established and its informer synced;
// a builtin kind once Run has listed it.
func TestKindServedWaitsForTheCRD(t *testing.T) {
	h := newHarness(t, collection.SchemasFor(collections.GatewayClass, collections.ConfigMap), crdclient.Options{})
	select {
	case <-h.cl.KindServed(gvk.ConfigMap):
	case <-time.After(10 * time.Second):
		t.Fatal("builtin ConfigMaps never served")
	}
	// synced (empty) without its CRD, but not served
	select {
	case <-h.cl.KindServed(gvk.GatewayClass):
		t.Fatal("GatewayClass served without its CRD")
	default:
	}
	select {
	case <-h.cl.KindServed(gvk.HTTPRoute):
		t.Fatal("a kind not watched is served")
	default:
	}
	if _, err := h.client.Extensions().ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(),
		crd("gatewayclasses", "gateway.networking.k8s.io", "v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.cl.KindServed(gvk.GatewayClass):
	case <-time.After(10 * time.Second):
		t.Fatal("GatewayClass not served once its CRD exists")
	}
}
