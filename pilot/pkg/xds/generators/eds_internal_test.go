package generators

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
)

func namespacedProxy(t *testing.T, ns, network string, n int) *model.Proxy {
	t.Helper()
	md := map[string]any{"NAMESPACE": ns}
	if network != "" {
		md["NETWORK"] = network
	}
	s, err := structpb.NewStruct(md)
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.ParseServiceNodeWithMetadata(fmt.Sprintf("sidecar~10.0.1.%d~app-%d.%s~%s.svc.cluster.local", n, n, ns, ns), s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A load assignment depends on the proxy's namespace only through the
// service (and rule) its scope resolves the cluster's host to: sidecars of
// different namespaces that see the same service share one assignment,
// while a proxy of another network gets its own.
func TestEndpointsSharedAcrossNamespaces(t *testing.T) {
	host := "reviews.default.svc.cluster.local"
	svc := &model.Service{Hostname: host, Ports: model.PortList{{Name: "http", Port: 9080, Protocol: protocol.HTTP}}, DefaultAddress: "10.96.0.12",
		ClusterVIPs: model.AddressMap{Addresses: map[string][]string{"Kubernetes": {"10.96.0.12"}}},
		Attributes:  model.ServiceAttributes{Name: "reviews", Namespace: "default", ServiceRegistry: model.Kubernetes}}
	idx := model.NewEndpointIndex()
	idx.UpdateServiceEndpoints(model.NewShardKey(model.Kubernetes, "Kubernetes"), host, "default", []*model.IstioEndpoint{{
		Addresses: []string{"10.244.0.21"}, EndpointPort: 9080, ServicePortName: "http", HealthStatus: model.Healthy,
		Labels: map[string]string{"app": "reviews"}, Locality: model.Locality{ClusterID: "Kubernetes"}}})
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: memory.New(collections.Pilot), ServiceDiscovery: services{svc}})
	req := &model.PushRequest{Full: true, Push: model.InitContext(env, nil, &model.PushRequest{Full: true})}
	g := &SidecarGenerators{Discovery: services{svc}, Endpoints: idx}
	name := "outbound|9080||" + host
	w := &xds.WatchedResource{TypeURL: xds.EndpointType, ResourceNames: map[string]struct{}{name: {}}}
	gen := func(p *model.Proxy) *xds.Generated {
		out, err := g.endpoints(p, w, req)
		if err != nil || len(out.Resources) != 1 {
			t.Fatalf("endpoints of %s: %v, %d resources", p.ID, err, len(out.Resources))
		}
		return &out
	}
	first := gen(namespacedProxy(t, "default", "", 1)).Resources[0]
	for _, tc := range []struct {
		proxy  *model.Proxy
		shared bool
	}{
		{namespacedProxy(t, "shop", "", 2), true},
		{namespacedProxy(t, "ops", "", 3), true},
		{namespacedProxy(t, "shop", "other", 4), false},
	} {
		if got := gen(tc.proxy).Resources[0]; (got == first) != tc.shared {
			t.Errorf("%s: shared %v, want %v", tc.proxy.ID, got == first, tc.shared)
		}
	}
}
