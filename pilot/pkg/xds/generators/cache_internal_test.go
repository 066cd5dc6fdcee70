package generators

import (
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// The newest snapshot owns the cache: generation from an older one (a
// connection still finishing its push) neither wipes nor fills it.
func TestCacheBelongsToTheNewestSnapshot(t *testing.T) {
	old := model.NewPushContext()
	newer := model.NewPushContext()
	var c snapshotCache[string]
	builds := 0
	build := func(name string) func() xds.Generated {
		return func() xds.Generated {
			builds++
			return xds.Generated{Resources: []*discovery.Resource{{Name: name}}}
		}
	}
	c.get(newer, "k", 0, build("new"))
	if got := c.get(old, "k", 0, build("old")); got.Resources[0].Name != "old" {
		t.Errorf("an older snapshot read the newer one's entry: %v", got.Resources)
	}
	if got := c.get(newer, "k", 0, build("new-again")); got.Resources[0].Name != "new" || builds != 2 {
		t.Errorf("the newer snapshot's entry was lost to an older snapshot (builds %d, got %v)", builds, got.Resources)
	}
	// versions: a different one misses, an older build never replaces a newer one
	c.get(newer, "v", 2, build("v2"))
	c.get(newer, "v", 1, build("v1"))
	if got := c.get(newer, "v", 2, build("v2-again")); got.Resources[0].Name != "v2" {
		t.Errorf("version 2 entry replaced by an older build: %v", got.Resources)
	}
}
