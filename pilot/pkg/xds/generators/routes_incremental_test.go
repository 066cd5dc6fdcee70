package generators_test

import (
	"bytes"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/tests/refmesh"
)

// proxyOf is the proxy a node ID and metadata make, as the server makes it.
func proxyOf(t *testing.T, nodeID string, md map[string]any) *model.Proxy {
	t.Helper()
	s, err := structpb.NewStruct(md)
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.ParseServiceNodeWithMetadata(nodeID, s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// routeNames are the given names plus every port of the services the
// proxy sees: every classic per-port configuration it can ask for.
func routeNames(push *model.PushContext, proxy *model.Proxy, extra []string) []string {
	seen := map[string]bool{}
	for _, n := range extra {
		seen[n] = true
	}
	for _, svc := range push.ServicesForProxy(proxy) {
		for _, p := range svc.Ports {
			seen[strconv.Itoa(p.Port)] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// sameRoutes generates the proxy's routes with configurations assembled
// from cached virtual hosts and with each built whole, and requires the
// same resources, to the byte of their encoding and version, and the same
// held ones with the same reasons. It returns how many virtual hosts the
// assembled side built.
func sameRoutes(t *testing.T, newGens func() *generators.SidecarGenerators, env *model.Environment, proxy *model.Proxy, extra []string) int64 {
	t.Helper()
	push := model.InitContext(env, nil, nil)
	names := routeNames(push, proxy, extra)
	assembledGen, fullGen := newGens(), newGens()
	generators.FullRoutes(fullGen)
	// twice: the second run reads the caches
	for range 2 {
		got, err := generators.Routes(assembledGen, proxy, push, names...)
		if err != nil {
			t.Fatal(err)
		}
		want, err := generators.Routes(fullGen, proxy, push, names...)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Resources) != len(want.Resources) {
			t.Fatalf("%d resources assembled, %d built whole", len(got.Resources), len(want.Resources))
		}
		for i, w := range want.Resources {
			g := got.Resources[i]
			if g.Name != w.Name || g.Version != w.Version || g.Resource.GetTypeUrl() != w.Resource.GetTypeUrl() ||
				!bytes.Equal(g.Resource.GetValue(), w.Resource.GetValue()) {
				t.Errorf("route configuration %q: assembled %q (%d bytes, version %s), built whole %q (%d bytes, version %s)",
					w.Name, g.Name, len(g.Resource.GetValue()), g.Version, w.Name, len(w.Resource.GetValue()), w.Version)
			}
		}
		if len(got.Held) != len(want.Held) {
			t.Fatalf("held %v assembled, %v built whole", got.Held, want.Held)
		}
		for i := range want.Held {
			if got.Held[i] != want.Held[i] {
				t.Errorf("held %v assembled, %v built whole", got.Held[i], want.Held[i])
			}
		}
	}
	return generators.VirtualHostBuilds(assembledGen)
}

// Route configurations assembled from cached virtual hosts are those built
// whole, to the byte, for every golden case and reference mesh.
func TestAssembledRoutesMatchFullBuilds(t *testing.T) {
	var assembled int64
	for _, gc := range goldenCases {
		t.Run(gc.name, func(t *testing.T) {
			env, idx, disc := envFromFileWith(t, filepath.Join("testdata", gc.name+".yaml"), gc.mesh, gc.hashAllocate)
			md := map[string]any{"NAMESPACE": gc.ns}
			if gc.labels != nil {
				md["LABELS"] = gc.labels
			}
			for k, v := range gc.meta {
				md[k] = v
			}
			newGens := func() *generators.SidecarGenerators {
				g := &generators.SidecarGenerators{Endpoints: idx, Discovery: disc, SidecarIngressTLS: gc.sidecarIngressTLS, DualStack: gc.dualStack}
				g.ProtocolFilters = gc.protocols
				return g
			}
			assembled += sameRoutes(t, newGens, env, proxyOf(t, gc.nodeID, md), gc.routes)
		})
	}
	refs := []struct {
		name, dir string
		mesh      refmesh.Mesh
		proxy     adsc.Config
	}{
		{"bookinfo", "sidecar-productpage", refmesh.Bookinfo, referenceProxy},
		{"extensions/productpage", "sidecar-productpage", refmesh.Extensions, referenceProxy},
		{"extensions/reviews", "sidecar-reviews", refmesh.Extensions, reviewsProxy},
		{"policy/productpage", "sidecar-productpage", refmesh.Policy, policyProxy("productpage", "10.244.0.10")},
		{"policy/ratings", "sidecar-ratings", refmesh.Policy, policyProxy("ratings", "10.244.0.31")},
		{"gateways/ingress", "router-ingressgateway", refmesh.Gateways, ingressRouter},
		{"gateways/edge", "router-edge", refmesh.Gateways, edgeRouter},
	}
	for _, r := range refs {
		t.Run("reference/"+r.name, func(t *testing.T) {
			src, env := r.mesh.Env(t)
			newGens := func() *generators.SidecarGenerators {
				return &generators.SidecarGenerators{Endpoints: src.Index, Discovery: src.Agg}
			}
			want := referenceResources(t, r.mesh, "real/"+r.dir+"/routes.json")
			var extra []string
			for n := range want {
				extra = append(extra, n)
			}
			assembled += sameRoutes(t, newGens, env, proxyOf(t, r.proxy.NodeID, r.proxy.Metadata), extra)
		})
	}
	if assembled == 0 {
		t.Error("no configuration was assembled: the comparison compared the full path with itself")
	}
}
