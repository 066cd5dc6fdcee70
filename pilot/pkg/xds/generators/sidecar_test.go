package generators_test

import (
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/meshplane/istiod/pilot/pkg/config/file"
	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/tests/refmesh"
)

// staticDiscovery is a fixed service list.
type staticDiscovery struct {
	services []*model.Service
	targets  map[string][]model.ServiceTarget // by IP
}

func (d *staticDiscovery) Services() []*model.Service { return d.services }
func (d *staticDiscovery) GetService(h string) *model.Service {
	for _, s := range d.services {
		if s.Hostname == h {
			return s
		}
	}
	return nil
}
func (d *staticDiscovery) GetProxyServiceTargets(q *model.ProxyQuery) []model.ServiceTarget {
	for _, ip := range q.IPAddresses {
		if t := d.targets[ip]; t != nil {
			return t
		}
	}
	return nil
}

func bookSvc(name, vip string, ports ...*model.Port) *model.Service {
	return &model.Service{Hostname: name + ".bookinfo.svc.cluster.local", Ports: ports, DefaultAddress: vip,
		ClusterVIPs: model.AddressMap{Addresses: map[string][]string{"Kubernetes": {vip}}},
		Attributes:  model.ServiceAttributes{Name: name, Namespace: "bookinfo", ServiceRegistry: model.Kubernetes}}
}

func httpPort(p int) *model.Port { return &model.Port{Name: "http", Port: p, Protocol: protocol.HTTP} }

// bookinfoEnv loads the Istio objects of the reference mesh into a store and
// builds services and endpoints by hand (the registries are tested apart).
func bookinfoEnv(t *testing.T) (*model.Environment, *model.EndpointIndex) {
	t.Helper()
	b := refmesh.ReadFile(t, "input/bookinfo.yaml")
	store := memory.New(collections.Pilot)
	for _, d := range crd.Parse(b, crd.Options{Domain: "cluster.local"}) {
		if d.Config != nil {
			if _, err := store.Create(*d.Config); err != nil {
				t.Fatal(err)
			}
		}
	}
	pp := bookSvc("productpage", "10.96.10.10", httpPort(9080))
	reviews := bookSvc("reviews", "10.96.10.12", httpPort(9080))
	svcs := []*model.Service{pp, bookSvc("details", "10.96.10.11", httpPort(9080)), reviews,
		bookSvc("ratings", "10.96.10.13", &model.Port{Name: "grpc", Port: 9090, Protocol: protocol.GRPC}, &model.Port{Name: "tcp-metrics", Port: 9102, Protocol: protocol.TCP})}
	idx := model.NewEndpointIndex()
	shard := model.NewShardKey(model.Kubernetes, "Kubernetes")
	var eps []*model.IstioEndpoint
	for i, v := range []string{"v1", "v2", "v3"} {
		eps = append(eps, &model.IstioEndpoint{Addresses: []string{"10.244.0.2" + string(rune('1'+i))}, EndpointPort: 9080, ServicePortName: "http",
			Labels: map[string]string{"app": "reviews", "version": v}, HealthStatus: model.Healthy, Locality: model.Locality{ClusterID: "Kubernetes"}})
	}
	idx.UpdateServiceEndpoints(shard, reviews.Hostname, "bookinfo", eps)
	disc := &staticDiscovery{services: svcs, targets: map[string][]model.ServiceTarget{
		"10.244.0.10": {{Service: pp, Port: model.ServiceInstancePort{Port: pp.Ports[0], TargetPort: 9080}}},
	}}
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: disc, EndpointIndex: idx})
	return env, idx
}

func TestSidecarConfigForBookinfo(t *testing.T) {
	env, idx := bookinfoEnv(t)
	s := xdstest.NewServer(t)
	gens := &generators.SidecarGenerators{Endpoints: idx, Discovery: env.ServiceDiscovery()}
	gens.Register(s.DS)
	s.DS.InitPushContext(env)
	for _, delta := range []bool{false, true} {
		c := xdstest.Dial(t, s, adsc.Config{Delta: delta, NodeID: "sidecar~10.244.0.10~productpage-v1-abc.bookinfo~bookinfo.svc.cluster.local",
			Metadata: map[string]any{"NAMESPACE": "bookinfo", "LABELS": map[string]any{"app": "productpage", "version": "v1"}}})
		if err := c.Watch(xds.ClusterType); err != nil {
			t.Fatal(err)
		}
		cds := xdstest.Next(t, c)
		for _, want := range []string{"outbound|9080|v2|reviews.bookinfo.svc.cluster.local", "outbound|9102||ratings.bookinfo.svc.cluster.local",
			"BlackHoleCluster", "PassthroughCluster", "InboundPassthroughCluster", "inbound|9080||"} {
			if cds.Resources[want] == nil {
				t.Errorf("delta=%v: CDS lacks %s (has %d)", delta, want, len(cds.Resources))
			}
		}
		if lb := cds.Resources["outbound|9080||reviews.bookinfo.svc.cluster.local"].(*clusterv3.Cluster).LbPolicy; lb != clusterv3.Cluster_LEAST_REQUEST {
			t.Errorf("reviews lb %v", lb)
		}
		if err := c.Watch(xds.EndpointType, "outbound|9080|v2|reviews.bookinfo.svc.cluster.local", "outbound|9080|v9|reviews.bookinfo.svc.cluster.local"); err != nil {
			t.Fatal(err)
		}
		eds := xdstest.Next(t, c)
		v2 := eds.Resources["outbound|9080|v2|reviews.bookinfo.svc.cluster.local"].(*endpointv3.ClusterLoadAssignment)
		if len(v2.Endpoints) != 1 || len(v2.Endpoints[0].LbEndpoints) != 1 ||
			v2.Endpoints[0].LbEndpoints[0].GetEndpoint().GetAddress().GetSocketAddress().GetAddress() != "10.244.0.22" {
			t.Errorf("delta=%v: v2 endpoints %v", delta, v2)
		}
		if err := c.Watch(xds.ListenerType); err != nil {
			t.Fatal(err)
		}
		lds := xdstest.Next(t, c)
		for _, want := range []string{"0.0.0.0_9080", "0.0.0.0_9090", "10.96.10.13_9102", "virtualOutbound", "virtualInbound"} {
			if lds.Resources[want] == nil {
				t.Errorf("delta=%v: LDS lacks %s", delta, want)
			}
		}
		if err := c.Watch(xds.RouteType, "9080"); err != nil {
			t.Fatal(err)
		}
		rds := xdstest.Next(t, c)
		rc := rds.Resources["9080"].(*routev3.RouteConfiguration)
		var vhosts []string
		for _, vh := range rc.VirtualHosts {
			vhosts = append(vhosts, vh.Name)
		}
		if strings.Join(vhosts, ",") != "details.bookinfo.svc.cluster.local:9080,productpage.bookinfo.svc.cluster.local:9080,reviews.bookinfo.svc.cluster.local:9080,allow_any" {
			t.Errorf("delta=%v: vhosts %v", delta, vhosts)
		}
		if got := rc.VirtualHosts[2].Routes[1].GetRoute().GetWeightedClusters().GetClusters(); len(got) != 2 || got[0].Name != "outbound|9080|v1|reviews.bookinfo.svc.cluster.local" {
			t.Errorf("delta=%v: reviews weighted route %v", delta, got)
		}
	}
}

// The bundled example (ServiceEntries and WorkloadEntries, no cluster)
// generates without a single invalid resource for a sidecar in its namespace.
func TestBundledExampleGeneratesValidConfig(t *testing.T) {
	src, err := file.New(file.Options{Dir: "../../../../manifests/examples/bookinfo", Schemas: collections.Pilot, Domain: "cluster.local"})
	if err != nil {
		t.Fatal(err)
	}
	src.Reload()
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: src, ServiceDiscovery: &staticDiscovery{
		services: []*model.Service{bookSvc("reviews", "10.96.0.12", httpPort(9080))}}})
	s := xdstest.NewServer(t)
	(&generators.SidecarGenerators{Discovery: env.ServiceDiscovery()}).Register(s.DS)
	s.DS.InitPushContext(env)
	c := xdstest.Dial(t, s, adsc.Config{NodeID: "sidecar~10.244.0.10~productpage-v1.bookinfo~bookinfo.svc.cluster.local", Metadata: map[string]any{"NAMESPACE": "bookinfo"}})
	// the checking client fails on any resource that does not pass ValidateAll
	for _, r := range xdstest.WatchInTurn(t, c, xdstest.Watch{Type: xds.ClusterType}, xdstest.Watch{Type: xds.ListenerType},
		xdstest.Watch{Type: xds.RouteType, Names: []string{"9080"}},
		xdstest.Watch{Type: xds.EndpointType, Names: []string{"outbound|9080||reviews.bookinfo.svc.cluster.local"}}) {
		if len(r.Resources) == 0 {
			t.Errorf("%s: no resources", r.TypeURL)
		}
	}
	// and nothing was held back for failing validation (held resources are
	// not sent, so the client alone would not notice)
	if ps := s.DS.Problems(); len(ps) != 0 {
		t.Errorf("problems: %+v", ps)
	}
}
