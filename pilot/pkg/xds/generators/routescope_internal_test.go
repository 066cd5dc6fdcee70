package generators

import (
	"bytes"
	"fmt"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

func routeProxy(t *testing.T, app string) *model.Proxy {
	t.Helper()
	md, err := structpb.NewStruct(map[string]any{"NAMESPACE": "default", "LABELS": map[string]any{"app": app, "version": "v1"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.ParseServiceNodeWithMetadata(fmt.Sprintf("sidecar~10.0.0.%d~%s-1.default~default.svc.cluster.local", len(app), app), md)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Sidecars of one namespace with different labels share one route
// configuration unless something routes on their labels: a sourceLabels
// match (or a DestinationRule workload selector) makes the labels it names
// part of the key, and only those.
func TestRoutesSharedAcrossWorkloads(t *testing.T) {
	host := "reviews.default.svc.cluster.local"
	svc := &model.Service{Hostname: host, Ports: model.PortList{{Name: "http", Port: 9080, Protocol: protocol.HTTP}}, DefaultAddress: "10.96.0.12",
		ClusterVIPs: model.AddressMap{Addresses: map[string][]string{"Kubernetes": {"10.96.0.12"}}},
		Attributes:  model.ServiceAttributes{Name: "reviews", Namespace: "default", ServiceRegistry: model.Kubernetes}}
	for _, tc := range []struct {
		name         string
		sourceLabels map[string]string
		// which of productpage, ratings, and a second productpage pod
		// (other version) get the first one's copy
		shared [3]bool
	}{
		{"no label matters", nil, [3]bool{true, true, true}},
		{"app matters, version does not", map[string]string{"app": "productpage"}, [3]bool{true, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := memory.New(collections.Pilot)
			vs := &networking.VirtualService{Hosts: []string{host}, Http: []*networking.HTTPRoute{
				{Match: []*networking.HTTPMatchRequest{{SourceLabels: tc.sourceLabels, Headers: map[string]*networking.StringMatch{
					"end-user": {MatchType: &networking.StringMatch_Exact{Exact: "jason"}}}}},
					Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: host, Subset: "v2"}}}},
				{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: host, Subset: "v1"}}}},
			}}
			if _, err := store.Create(config.Config{Meta: config.Meta{GroupVersionKind: gvk.VirtualService, Name: "reviews", Namespace: "default",
				Domain: "cluster.local"}, Spec: vs}); err != nil {
				t.Fatal(err)
			}
			env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: services{svc}})
			req := &model.PushRequest{Full: true, Push: model.InitContext(env, nil, &model.PushRequest{Full: true})}
			g := &SidecarGenerators{Discovery: services{svc}}
			w := &xds.WatchedResource{TypeURL: xds.RouteType, ResourceNames: map[string]struct{}{"9080": {}}}
			gen := func(p *model.Proxy) *xds.Generated {
				out, err := g.routes(p, w, req)
				if err != nil || len(out.Resources) != 1 {
					t.Fatalf("routes: %v, %d resources", err, len(out.Resources))
				}
				return &out
			}
			pp2 := routeProxy(t, "productpage")
			pp2.Labels["version"] = "v2"
			first := gen(routeProxy(t, "productpage")).Resources[0]
			for i, p := range []*model.Proxy{routeProxy(t, "productpage"), routeProxy(t, "ratings"), pp2} {
				got := gen(p).Resources[0]
				if (got == first) != tc.shared[i] {
					t.Errorf("%s (%v): shared %v, want %v", p.ID, p.Labels, got == first, tc.shared[i])
				}
				// a copy of its own must be because its routes differ
				if got != first && bytes.Equal(got.Resource.Value, first.Resource.Value) {
					t.Errorf("%s built its own copy of an identical route configuration", p.ID)
				}
			}
		})
	}
}
