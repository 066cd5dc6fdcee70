package ambient_test

import (
	"slices"
	"sync"
	"testing"
)

// namespaces is a namespace filter a test changes.
type namespaces struct {
	mu       sync.Mutex
	selected map[string]bool
	handlers []func()
}

func (n *namespaces) Filter(ns string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.selected[ns]
}

func (n *namespaces) AddHandler(h func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.handlers = append(n.handlers, h)
}

func (n *namespaces) set(ns ...string) {
	n.mu.Lock()
	n.selected = map[string]bool{}
	for _, x := range ns {
		n.selected[x] = true
	}
	hs := slices.Clone(n.handlers)
	n.mu.Unlock()
	for _, h := range hs {
		h()
	}
}

// With discoverySelectors, ztunnel is sent the pods and Services of the
// selected namespaces only, and what a change of the selection brings in
// or takes out.
func TestDiscoverySelectorsNarrowTheIndex(t *testing.T) {
	f := &namespaces{selected: map[string]bool{"travel": true, "istio-system": true}}
	x := newMesh(referenceObjects(t)).indexWith(t, f)
	has := func(name string) bool {
		for _, a := range x.Addresses().List() {
			if a.Name == name {
				return true
			}
		}
		return false
	}
	if !has(flightsUID) || has(roomsUID) || has(legacyUID) || has("hotels/rooms.hotels.svc.cluster.local") {
		t.Fatal("hotels is not selected, yet its pods or services are in the index (or travel's are not)")
	}
	f.set("hotels", "istio-system")
	eventually(t, "hotels in, travel out", func() bool { return has(roomsUID) && !has(flightsUID) && has("hotels/rooms.hotels.svc.cluster.local") })
}
