package serviceentry_test

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/serviceentry"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
)

// plainStore hides the collections of a store: the registry must follow its
// events instead.
type plainStore struct{ model.ConfigStoreController }

func TestStoreWithoutCollections(t *testing.T) {
	store := memory.New(collections.Pilot)
	if _, err := store.Create(se("ns1", "x", &networking.ServiceEntry{Hosts: []string{"before.example"},
		Ports: []*networking.ServicePort{httpPort(80)}, Resolution: networking.ServiceEntry_DNS})); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	rec := model.NewRecordingXDSUpdater(0)
	reg := serviceentry.NewController(plainStore{store}, serviceentry.Options{XDSUpdater: rec, Stop: stop})
	f := &fixture{t: t}
	f.eventually("synced", reg.HasSynced)
	if _, err := store.Create(se("ns1", "y", &networking.ServiceEntry{Hosts: []string{"after.example"},
		Ports: []*networking.ServicePort{httpPort(80)}, Resolution: networking.ServiceEntry_DNS})); err != nil {
		t.Fatal(err)
	}
	f.eventually("both services", func() bool { return len(reg.Services()) == 2 })
	if err := store.Delete(se("", "", nil).GroupVersionKind, "x", "ns1", nil); err != nil {
		t.Fatal(err)
	}
	f.eventually("deleted", func() bool { return reg.GetService("before.example") == nil })
}
