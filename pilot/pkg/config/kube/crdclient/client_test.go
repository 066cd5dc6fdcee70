package crdclient_test

import (
	"context"
	"strings"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	clientnetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crdclient"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/kube"
)

func crd(plural, group string, versions ...string) *apiextv1.CustomResourceDefinition {
	c := &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec:       apiextv1.CustomResourceDefinitionSpec{Group: group},
		Status: apiextv1.CustomResourceDefinitionStatus{Conditions: []apiextv1.CustomResourceDefinitionCondition{
			{Type: apiextv1.Established, Status: apiextv1.ConditionTrue}}},
	}
	for _, v := range versions {
		c.Spec.Versions = append(c.Spec.Versions, apiextv1.CustomResourceDefinitionVersion{Name: v, Served: true})
	}
	return c
}

// validRoute is a route Istio's validation accepts (a VirtualService
// needs one).
func validRoute(host string) []*networking.HTTPRoute {
	return []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: host}}}}}
}

func vs(name, ns string, labels map[string]string, host string) *clientnetworking.VirtualService {
	return &clientnetworking.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       networking.VirtualService{Hosts: []string{host}, Http: validRoute(host)},
	}
}

type harness struct {
	t      *testing.T
	client kube.Client
	cl     *crdclient.Client
	events chan string
	stop   chan struct{}
}

func newHarness(t *testing.T, schemas collection.Schemas, opts crdclient.Options, objs ...any) *harness {
	t.Helper()
	var robjs []any
	robjs = append(robjs, objs...)
	client := kube.NewFakeClient(toRuntime(robjs)...)
	cl, err := crdclient.New(client, schemas, opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, client: client, cl: cl, events: make(chan string, 100), stop: make(chan struct{})}
	for _, s := range cl.Schemas().All() {
		cl.RegisterEventHandler(s.GroupVersionKind(), func(old, cur config.Config, e model.Event) {
			h.events <- e.String() + " " + cur.GroupVersionKind.Kind + " " + cur.Namespace + "/" + cur.Name
		})
	}
	go cl.Run(h.stop)
	t.Cleanup(func() { close(h.stop) })
	h.waitSynced()
	return h
}

func (h *harness) waitSynced() {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !h.cl.HasSynced() {
		if time.Now().After(deadline) {
			h.t.Fatal("not synced")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) next() string {
	h.t.Helper()
	select {
	case e := <-h.events:
		return e
	case <-time.After(10 * time.Second):
		h.t.Fatal("no event")
		return ""
	}
}

func TestInformerToConfig(t *testing.T) {
	h := newHarness(t, collection.SchemasFor(collections.VirtualService), crdclient.Options{DomainSuffix: "cluster.local"},
		crd("virtualservices", "networking.istio.io", "v1", "v1alpha3"), vs("a", "ns", nil, "a"))
	if e := h.next(); e != "add VirtualService ns/a" {
		t.Fatalf("event %q", e)
	}
	got := h.cl.Get(gvk.VirtualService, "a", "ns")
	if got == nil || got.Domain != "cluster.local" || got.Spec.(*networking.VirtualService).Hosts[0] != "a" {
		t.Fatalf("Get = %+v", got)
	}
	if h.cl.Get(gvk.VirtualService_v1alpha3, "a", "ns") != nil {
		t.Error("Get resolved an alias GVK")
	}
	ctx := context.Background()
	upd := vs("a", "ns", nil, "a2")
	if _, err := h.client.Istio().NetworkingV1().VirtualServices("ns").Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := h.next(); e != "update VirtualService ns/a" {
		t.Fatalf("event %q", e)
	}
	if err := h.client.Istio().NetworkingV1().VirtualServices("ns").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := h.next(); e != "delete VirtualService ns/a" {
		t.Fatalf("event %q", e)
	}
}

func TestRevisionFilter(t *testing.T) {
	rev := func(r string) map[string]string { return map[string]string{"istio.io/rev": r} }
	gw := func(name string, labels map[string]string) *gatewayv1.Gateway {
		return &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels}}
	}
	schemas := collection.SchemasFor(collections.VirtualService, collections.KubernetesGateway)
	h := newHarness(t, schemas, crdclient.Options{Revision: "canary"},
		crd("virtualservices", "networking.istio.io", "v1"), crd("gateways", "gateway.networking.k8s.io", "v1"),
		vs("mine", "ns", rev("canary"), "a"), vs("other", "ns", rev("stable"), "b"), vs("shared", "ns", nil, "c"),
		gw("gw-other", rev("stable")))
	deadline := time.Now().Add(10 * time.Second)
	for len(h.cl.List(gvk.VirtualService, "")) < 2 || len(h.cl.List(gvk.KubernetesGateway, "")) < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("objects did not arrive: vs=%d gw=%d", len(h.cl.List(gvk.VirtualService, "")), len(h.cl.List(gvk.KubernetesGateway, "")))
		}
		time.Sleep(5 * time.Millisecond)
	}
	names := map[string]bool{}
	for _, c := range h.cl.List(gvk.VirtualService, "ns") {
		names[c.Name] = true
	}
	if !names["mine"] || !names["shared"] || names["other"] {
		t.Errorf("revision canary sees %v", names)
	}
	if h.cl.Get(gvk.KubernetesGateway, "gw-other", "ns") == nil {
		t.Error("Gateway API Gateway must not be revision-filtered")
	}
	// relabeling an object out of the revision removes it
	ctx := context.Background()
	if _, err := h.client.Istio().NetworkingV1().VirtualServices("ns").Update(ctx, vs("mine", "ns", rev("stable"), "a"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for h.cl.Get(gvk.VirtualService, "mine", "ns") != nil {
		if time.Now().After(deadline) {
			t.Fatal("relabeled object still visible")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDelayedCRD(t *testing.T) {
	h := newHarness(t, collection.SchemasFor(collections.VirtualService, collections.Gateway), crdclient.Options{},
		crd("gateways", "networking.istio.io", "v1"))
	if n := len(h.cl.List(gvk.VirtualService, "")); n != 0 {
		t.Fatalf("%d objects before the CRD exists", n)
	}
	ctx := context.Background()
	// the object exists in the API before its CRD is seen (fake clients accept it)
	if _, err := h.client.Istio().NetworkingV1().VirtualServices("ns").Create(ctx, vs("late", "ns", nil, "x"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.Extensions().ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd("virtualservices", "networking.istio.io", "v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := h.next(); e != "add VirtualService ns/late" {
		t.Fatalf("event %q", e)
	}
}

func TestWritesThroughTypedClients(t *testing.T) {
	h := newHarness(t, collection.SchemasFor(collections.VirtualService, collections.EnvoyFilter), crdclient.Options{},
		crd("virtualservices", "networking.istio.io", "v1"), crd("envoyfilters", "networking.istio.io", "v1alpha3"))
	cfg := config.Config{
		Meta: config.Meta{GroupVersionKind: gvk.VirtualService, Name: "w", Namespace: "ns"},
		Spec: &networking.VirtualService{Hosts: []string{"w"}, Http: validRoute("w")},
	}
	if _, err := h.cl.Create(cfg); err != nil {
		t.Fatal(err)
	}
	if e := h.next(); e != "add VirtualService ns/w" {
		t.Fatalf("event %q", e)
	}
	got, err := h.client.Istio().NetworkingV1().VirtualServices("ns").Get(context.Background(), "w", metav1.GetOptions{})
	if err != nil || got.Spec.Hosts[0] != "w" {
		t.Fatalf("typed Get: %v %v", got, err)
	}
	cfg.Spec = &networking.VirtualService{Hosts: []string{"w2"}, Http: validRoute("w2")}
	if _, err := h.cl.Update(cfg); err != nil {
		t.Fatal(err)
	}
	if e := h.next(); e != "update VirtualService ns/w" {
		t.Fatalf("event %q", e)
	}
	ef := config.Config{Meta: config.Meta{GroupVersionKind: gvk.EnvoyFilter, Name: "ef", Namespace: "ns"}, Spec: &networking.EnvoyFilter{}}
	if _, err := h.cl.Create(ef); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.Istio().NetworkingV1alpha3().EnvoyFilters("ns").Get(context.Background(), "ef", metav1.GetOptions{}); err != nil {
		t.Errorf("EnvoyFilter not written through the v1alpha3 client: %v", err)
	}
	if err := h.cl.Delete(gvk.VirtualService, "w", "ns", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.cl.Create(config.Config{Meta: config.Meta{GroupVersionKind: gvk.VirtualService, Name: "n", Namespace: "ns"}}); err == nil || err.Error() != "nil spec for n/ns" {
		t.Errorf("nil spec error = %v", err)
	}
	if _, err := h.cl.Create(config.Config{Meta: config.Meta{GroupVersionKind: gvk.HTTPRoute, Name: "n"}, Spec: &gatewayv1.HTTPRouteSpec{}}); err == nil || !strings.Contains(err.Error(), "unrecognized type") {
		t.Errorf("unknown kind error = %v", err)
	}
	_ = clientnetworkingv1alpha3.EnvoyFilter{}
}

func TestBuiltinKindAndStripping(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns",
		Annotations:   map[string]string{kube.LastAppliedAnnotation: "{...}", "keep": "me"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	h := newHarness(t, collection.SchemasFor(collections.ConfigMap), crdclient.Options{}, cm)
	if e := h.next(); e != "add ConfigMap ns/c" {
		t.Fatalf("event %q", e)
	}
	got := h.cl.Get(gvk.ConfigMap, "c", "ns")
	if got.Annotations["keep"] != "me" || got.Annotations[kube.LastAppliedAnnotation] != "" {
		t.Errorf("annotations %v", got.Annotations)
	}
	if obj, ok := got.Spec.(*corev1.ConfigMap); !ok || len(obj.ManagedFields) != 0 {
		t.Errorf("spec %T, managed fields kept", got.Spec)
	}
}
