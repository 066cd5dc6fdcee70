package crdclient_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crdclient"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/kube"
)

// startClient runs a CRD client over client with the last-good record
// in istio-system, its writer too when leader.
func startClient(t *testing.T, client kube.Client, leader bool) *crdclient.Client {
	t.Helper()
	cl, err := crdclient.New(client, collection.SchemasFor(collections.VirtualService), crdclient.Options{DomainSuffix: "cluster.local",
		LastGood: crdclient.LastGoodOptions{Namespace: "istio-system", Name: crdclient.LastGoodName("")}})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go cl.Run(stop)
	if leader {
		go cl.RunLastGoodWriter(stop)
	}
	waitFor(t, "synced", cl.HasSynced)
	return cl
}

// A replica started after an update was rejected serves the version the
// replica that saw the rejection kept: the leader records it in a
// ConfigMap, and removes it once the object is valid again.
func TestLastGoodVersionsAreShared(t *testing.T) {
	good := vs("reviews", "ns", nil, "reviews")
	good.UID = types.UID("uid-1")
	client := kube.NewFakeClient(crd("virtualservices", "networking.istio.io", "v1", "v1alpha3"), good)
	first := startClient(t, client, true)
	waitFor(t, "the valid version served", func() bool { return first.Get(gvk.VirtualService, "reviews", "ns") != nil })

	api := client.Istio().NetworkingV1().VirtualServices("ns")
	ctx := context.Background()
	bad := badRegex("reviews", "ns")
	bad.UID = good.UID
	if _, err := api.Update(ctx, bad, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := client.Kube().CoreV1().ConfigMaps("istio-system")
	waitFor(t, "the kept version recorded", func() bool {
		cm, err := cms.Get(ctx, "istiod-last-good-config", metav1.GetOptions{})
		return err == nil && strings.Contains(cm.Data["VirtualService_networking.istio.io_ns_reviews"], `"uid":"uid-1"`)
	})

	second := startClient(t, client, false)
	got := second.Get(gvk.VirtualService, "reviews", "ns")
	if got == nil {
		t.Fatal("the replica started after the rejection serves nothing for the object")
	}
	if want := first.Get(gvk.VirtualService, "reviews", "ns"); got.ResourceVersion != want.ResourceVersion || got.Spec.(interface{ String() string }).String() != want.Spec.(interface{ String() string }).String() {
		t.Errorf("second replica serves %v, the first %v", got.Spec, want.Spec)
	}

	// fixed: both serve the new version, the entry is removed
	fixed := vs("reviews", "ns", nil, "reviews")
	fixed.UID = good.UID
	fixed.Spec.Hosts = append(fixed.Spec.Hosts, "reviews-v2")
	if _, err := api.Update(ctx, fixed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the entry removed", func() bool {
		cm, err := cms.Get(ctx, "istiod-last-good-config", metav1.GetOptions{})
		return err == nil && len(cm.Data) == 0
	})
	for _, cl := range []*crdclient.Client{first, second} {
		waitFor(t, "the fixed version served", func() bool {
			c := cl.Get(gvk.VirtualService, "reviews", "ns")
			return c != nil && strings.Contains(c.Spec.(interface{ String() string }).String(), "reviews-v2")
		})
	}
}

// An entry applies only to the object it was written for, and only while
// that object's current version is rejected: a rejected object of another
// UID (deleted and created again) serves nothing, and an entry that does
// not validate is ignored and reported.
func TestLastGoodEntryAppliesToItsObjectOnly(t *testing.T) {
	entry := func(uid, host string) string {
		return `{"uid":"` + uid + `","object":{"apiVersion":"networking.istio.io/v1","kind":"VirtualService",` +
			`"metadata":{"name":"reviews","namespace":"ns","resourceVersion":"7"},` +
			`"spec":{"hosts":["` + host + `"],"http":[{"route":[{"destination":{"host":"` + host + `"}}]}]}}}`
	}
	for _, c := range []struct {
		name, uid, entry string
		served           bool
	}{
		{"same object", "uid-1", entry("uid-1", "reviews"), true},
		{"recreated object", "uid-2", entry("uid-1", "reviews"), false},
		{"invalid entry", "uid-1", entry("uid-1", "Not_A_Host!"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := badRegex("reviews", "ns")
			bad.UID = types.UID(c.uid)
			record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "istiod-last-good-config", Namespace: "istio-system"},
				Data: map[string]string{"VirtualService_networking.istio.io_ns_reviews": c.entry}}
			client := kube.NewFakeClient(crd("virtualservices", "networking.istio.io", "v1", "v1alpha3"), bad, record)
			cl := startClient(t, client, false)
			got := cl.Get(gvk.VirtualService, "reviews", "ns")
			if (got != nil) != c.served {
				t.Fatalf("served %v, want served=%v", got, c.served)
			}
			if got != nil && got.ResourceVersion != "7" {
				t.Errorf("served version %q, want the record's 7", got.ResourceVersion)
			}
		})
	}
}
