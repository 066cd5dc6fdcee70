package generators_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/tests/refmesh"
)

// referenceGRPCListener is the listener the reference proxyless client
// asked for.
const referenceGRPCListener = "reviews.bookinfo.svc.cluster.local:9080"

// referenceGRPCClient is the proxyless gRPC client (GENERATOR=grpc) of
// Istio's grpc-reviews answer; grpc-go speaks state-of-the-world ADS.
var referenceGRPCClient = adsc.Config{
	NodeID: "sidecar~10.244.0.10~productpage-v1-abc.bookinfo~bookinfo.svc.cluster.local",
	Metadata: map[string]any{
		"GENERATOR": "grpc", "NAMESPACE": "bookinfo", "CLUSTER_ID": "Kubernetes", "MESH_ID": "cluster.local",
		"LABELS":          map[string]any{"app": "productpage", "version": "v1"},
		"SERVICE_ACCOUNT": "bookinfo-productpage", "WORKLOAD_NAME": "productpage-v1",
		"INSTANCE_IPS": "10.244.0.10",
	},
}

// referenceGRPCAllowed lists the fields where our proxyless answer may
// differ from Istio's, by xDS type and dotted JSON path; each entry says
// why.
var referenceGRPCAllowed = map[string]map[string]string{
	"lds": {
		"apiListener.apiListener.statPrefix": "Istio sends the API listener's HttpConnectionManager without stat_prefix, " +
			"which its own proto rules require (min_len 1); we keep it valid, and grpc-go ignores the field",
	},
}

// TestGRPCConfigMatchesIstio runs the reference mesh through the real
// registries and the proxyless gRPC generators, follows the chain a grpc-go
// client walks (LDS for one target, then the RDS, CDS and EDS names each
// answer references) and compares every resource with what Istio's istiod
// sent.
func TestGRPCConfigMatchesIstio(t *testing.T) {
	src, env := refmesh.Env(t)
	s := xdstest.NewServer(t)
	// registered as the daemon does (pilot/pkg/bootstrap)
	gens := &generators.SidecarGenerators{Endpoints: src.Index, Discovery: src.Agg}
	gens.Register(s.DS)
	gens.RegisterGRPC(s.DS)
	s.DS.InitPushContext(env)
	c := xdstest.Dial(t, s, referenceGRPCClient)

	names := []string{referenceGRPCListener}
	for _, typ := range []string{xds.ListenerType, xds.RouteType, xds.ClusterType, xds.EndpointType} {
		short := xds.ShortType(typ)
		if len(names) == 0 {
			t.Fatalf("%s: the previous answer references nothing to ask for", short)
		}
		if err := c.Watch(typ, names...); err != nil {
			t.Fatal(err)
		}
		for xdstest.Next(t, c).TypeURL != typ {
		}
		got := map[string]map[string]any{}
		for _, n := range c.State(typ) {
			got[n] = refmesh.Decode(t, render1(t, c, typ, n)).(map[string]any)
		}
		want := referenceResources(t, refmesh.Bookinfo, "real/grpc-reviews/"+refFile[short])
		for path := range referenceGRPCAllowed[short] {
			for _, m := range []map[string]map[string]any{got, want} {
				for _, r := range m {
					dropPath(r, strings.Split(path, "."))
				}
			}
		}
		diffResources(t, short, got, want, nil)
		names = referencedNames(t, c, typ)
	}
}

// referencedNames returns, sorted, the resources of the next type a grpc-go
// client asks for after receiving the given type: route configurations of
// API listeners, clusters of routes, EDS service names of clusters.
func referencedNames(t *testing.T, c *adsc.Client, typ string) []string {
	t.Helper()
	set := map[string]bool{}
	for _, n := range c.State(typ) {
		switch r := c.Resource(typ, n).(type) {
		case *listenerv3.Listener:
			m := &hcm.HttpConnectionManager{}
			if err := r.GetApiListener().GetApiListener().UnmarshalTo(m); err != nil {
				t.Fatalf("listener %s: %v", n, err)
			}
			// the server validates resources, not what their Any fields hold
			if err := m.ValidateAll(); err != nil {
				t.Errorf("listener %s: invalid HttpConnectionManager: %v", n, err)
			}
			if name := m.GetRds().GetRouteConfigName(); name != "" {
				set[name] = true
			}
		case *routev3.RouteConfiguration:
			for _, vh := range r.GetVirtualHosts() {
				for _, rt := range vh.GetRoutes() {
					if cl := rt.GetRoute().GetCluster(); cl != "" {
						set[cl] = true
					}
					for _, wc := range rt.GetRoute().GetWeightedClusters().GetClusters() {
						set[wc.GetName()] = true
					}
				}
			}
		case *clusterv3.Cluster:
			if r.GetType() == clusterv3.Cluster_EDS {
				name := r.GetEdsClusterConfig().GetServiceName()
				if name == "" {
					name = r.GetName()
				}
				set[name] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// dropPath deletes the field at path (JSON object keys) from a decoded
// resource, if present.
func dropPath(m map[string]any, path []string) {
	for len(path) > 1 {
		next, ok := m[path[0]].(map[string]any)
		if !ok {
			return
		}
		m, path = next, path[1:]
	}
	delete(m, path[0])
}

// A proxyless client may dial a short name, as Kubernetes DNS would resolve
// it from the client's namespace; the listener keeps the name asked for and
// routes to the service's full name. A name that resolves to nothing gets
// no listener.
func TestGRPCShortNames(t *testing.T) {
	_, env := refmesh.Env(t)
	s := xdstest.NewServer(t)
	gens := &generators.SidecarGenerators{Endpoints: env.EndpointIndex(), Discovery: env.ServiceDiscovery()}
	gens.Register(s.DS)
	gens.RegisterGRPC(s.DS)
	s.DS.InitPushContext(env)
	c := xdstest.Dial(t, s, referenceGRPCClient)
	names := []string{"reviews:9080", "reviews.bookinfo:9080", "reviews.bookinfo.svc:9080", "reviews.bookinfo.svc.cluster.local:9080", "nosuch:9080"}
	if err := c.Watch(xds.ListenerType, names...); err != nil {
		t.Fatal(err)
	}
	r := xdstest.Next(t, c)
	for _, n := range names[:4] {
		l, ok := r.Resources[n].(*listenerv3.Listener)
		if !ok {
			t.Errorf("no listener for %s", n)
			continue
		}
		m := &hcm.HttpConnectionManager{}
		if err := l.GetApiListener().GetApiListener().UnmarshalTo(m); err != nil {
			t.Fatal(err)
		}
		if rc := m.GetRds().GetRouteConfigName(); rc != "outbound|9080||reviews.bookinfo.svc.cluster.local" {
			t.Errorf("%s routes through %q", n, rc)
		}
	}
	if _, ok := r.Resources["nosuch:9080"]; ok {
		t.Error("listener for a name no service has")
	}
}
