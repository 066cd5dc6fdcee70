package autoregistration_test

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// A WorkloadGroup deleted (its entries garbage-collected with it) and
// created again: the entries of the proxies still connected to this
// replica are created again from it, as Istio does, without the proxies
// reconnecting; a proxy of another group is not touched.
func TestGroupCreatedAgainRegistersConnectedProxies(t *testing.T) {
	f := newFixture(t,
		group("ns", "vms", &networking.WorkloadGroup{Template: &networking.WorkloadEntry{ServiceAccount: "sa"}}),
		group("ns", "others", &networking.WorkloadGroup{Template: &networking.WorkloadEntry{}}))
	c := f.controller("istiod-a")
	s := f.stream(vm("ns", "vms", "10.3.2.1", "sa"))
	other := f.stream(vm("ns", "others", "10.3.2.2", ""))
	if err := c.OnConnect(s); err != nil {
		t.Fatal(err)
	}
	if err := c.OnConnect(other); err != nil {
		t.Fatal(err)
	}
	f.waitEntry("ns", "vms-10.3.2.1", "created", exists)
	f.waitEntry("ns", "others-10.3.2.2", "created", exists)

	if err := f.store.Delete(gvk.WorkloadGroup, "vms", "ns", nil); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"vms-10.3.2.1", "others-10.3.2.2"} {
		if err := f.store.Delete(gvk.WorkloadEntry, n, "ns", nil); err != nil {
			t.Fatal(err)
		}
		f.waitEntry("ns", n, "deleted", gone)
	}
	if _, err := f.store.Create(config.Config{Meta: config.Meta{GroupVersionKind: gvk.WorkloadGroup, Name: "vms", Namespace: "ns"},
		Spec: &networking.WorkloadGroup{Template: &networking.WorkloadEntry{ServiceAccount: "sa"}}}); err != nil {
		t.Fatal(err)
	}
	e := f.waitEntry("ns", "vms-10.3.2.1", "created again", exists)
	if got, want := e.Annotations["istio.io/connectedAt"], ts(s.ConnectedAt); got != want || e.Annotations["istio.io/workloadController"] != "istiod-a" {
		t.Errorf("annotations %v, want connectedAt %s of the stream", e.Annotations, want)
	}
	if len(e.OwnerReferences) != 1 || e.OwnerReferences[0].Name != "vms" {
		t.Errorf("owner references %v", e.OwnerReferences)
	}
	if f.entry("ns", "others-10.3.2.2") != nil {
		t.Error("the entry of the other group was created again, with its group untouched")
	}
}
