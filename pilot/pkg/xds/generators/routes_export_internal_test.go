package generators

import (
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// FullRoutes makes g build every sidecar route configuration whole, as
// before configurations were assembled from cached virtual hosts (tests
// and benchmarks compare the two).
func FullRoutes(g *SidecarGenerators) { g.fullRoutes = true }

// VirtualHostBuilds is how many virtual hosts g has built for assembled
// route configurations.
func VirtualHostBuilds(g *SidecarGenerators) int64 { return g.vhosts.builds.Load() }

// Routes runs g's route generator for the proxy under push.
func Routes(g *SidecarGenerators, proxy *model.Proxy, push *model.PushContext, names ...string) (xds.Generated, error) {
	w := &xds.WatchedResource{TypeURL: xds.RouteType, ResourceNames: map[string]struct{}{}}
	for _, n := range names {
		w.ResourceNames[n] = struct{}{}
	}
	return g.routes(proxy, w, &model.PushRequest{Full: true, Push: push})
}

// WorkloadAddressGenerator is g's Address generator (benchmarks).
func WorkloadAddressGenerator(g *WorkloadGenerators) func(*model.Proxy, *xds.WatchedResource, *model.PushRequest) (xds.Generated, error) {
	return g.generateAddresses
}
