package generators_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// benchMesh is S services over 10 namespaces, each with one HTTP port, two
// endpoints (v1, v2), a DestinationRule with two subsets and a
// VirtualService splitting between them.
type benchMesh struct {
	services []*model.Service
	byHost   map[string]*model.Service
	targets  map[string][]model.ServiceTarget
}

func (m *benchMesh) Services() []*model.Service         { return m.services }
func (m *benchMesh) GetService(h string) *model.Service { return m.byHost[h] }
func (m *benchMesh) GetProxyServiceTargets(q *model.ProxyQuery) []model.ServiceTarget {
	for _, ip := range q.IPAddresses {
		if t := m.targets[ip]; t != nil {
			return t
		}
	}
	return nil
}

const benchPort = 8080

func benchEnv(tb testing.TB, n int) (*model.Environment, *model.EndpointIndex) {
	tb.Helper()
	store := memory.New(collections.Pilot)
	idx := model.NewEndpointIndex()
	shard := model.NewShardKey(model.Kubernetes, "Kubernetes")
	m := &benchMesh{byHost: map[string]*model.Service{}, targets: map[string][]model.ServiceTarget{}}
	for i := 0; i < n; i++ {
		name, ns := fmt.Sprintf("svc-%d", i), fmt.Sprintf("ns-%d", i%10)
		host := name + "." + ns + ".svc.cluster.local"
		vip := fmt.Sprintf("10.96.%d.%d", i/256, i%256)
		port := &model.Port{Name: "http", Port: benchPort, Protocol: protocol.HTTP}
		svc := &model.Service{Hostname: host, Ports: model.PortList{port}, DefaultAddress: vip,
			ClusterVIPs: model.AddressMap{Addresses: map[string][]string{"Kubernetes": {vip}}},
			Attributes:  model.ServiceAttributes{Name: name, Namespace: ns, ServiceRegistry: model.Kubernetes}}
		m.services = append(m.services, svc)
		m.byHost[host] = svc
		var eps []*model.IstioEndpoint
		for v, version := range []string{"v1", "v2"} {
			ip := fmt.Sprintf("10.%d.%d.%d", 1+v, i/256, i%256)
			eps = append(eps, &model.IstioEndpoint{Addresses: []string{ip}, EndpointPort: benchPort, ServicePortName: "http",
				Labels: map[string]string{"app": name, "version": version}, HealthStatus: model.Healthy,
				Locality: model.Locality{ClusterID: "Kubernetes"}, Namespace: ns})
			if i == 0 && v == 0 {
				m.targets[ip] = []model.ServiceTarget{{Service: svc, Port: model.ServiceInstancePort{Port: port, TargetPort: benchPort}}}
			}
		}
		idx.UpdateServiceEndpoints(shard, host, ns, eps)
		dr := &networking.DestinationRule{Host: host,
			TrafficPolicy: &networking.TrafficPolicy{
				LoadBalancer: &networking.LoadBalancerSettings{LbPolicy: &networking.LoadBalancerSettings_Simple{Simple: networking.LoadBalancerSettings_LEAST_REQUEST}},
				ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 100},
					Http: &networking.ConnectionPoolSettings_HTTPSettings{Http2MaxRequests: 1000}},
				OutlierDetection: &networking.OutlierDetection{Interval: durationpb.New(10 * time.Second), BaseEjectionTime: durationpb.New(30 * time.Second)},
			},
			Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}, {Name: "v2", Labels: map[string]string{"version": "v2"}}}}
		vs := &networking.VirtualService{Hosts: []string{host}, Http: []*networking.HTTPRoute{{
			Route: []*networking.HTTPRouteDestination{
				{Destination: &networking.Destination{Host: host, Subset: "v1"}, Weight: 90},
				{Destination: &networking.Destination{Host: host, Subset: "v2"}, Weight: 10}},
			Timeout: durationpb.New(5 * time.Second),
			Retries: &networking.HTTPRetry{Attempts: 2, PerTryTimeout: durationpb.New(time.Second), RetryOn: "5xx"},
		}}}
		for _, c := range []config.Config{
			{Meta: config.Meta{GroupVersionKind: gvk.DestinationRule, Name: name, Namespace: ns, Domain: "cluster.local"}, Spec: dr},
			{Meta: config.Meta{GroupVersionKind: gvk.VirtualService, Name: name, Namespace: ns, Domain: "cluster.local"}, Spec: vs},
		} {
			if _, err := store.Create(c); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: m, EndpointIndex: idx}), idx
}

// benchServer serves the sidecar generators over env on a loopback port.
// benchDial opens a raw ADS connection to addr, closed when the benchmark
// ends, and returns it with the node metadata meta as sent on the wire.
func benchDial(b *testing.B, addr string, meta map[string]any) (*grpc.ClientConn, *structpb.Struct) {
	b.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	md, err := structpb.NewStruct(meta)
	if err != nil {
		b.Fatal(err)
	}
	return conn, md
}

func benchServer(tb testing.TB, env *model.Environment, idx *model.EndpointIndex) (string, *xds.DiscoveryServer) {
	tb.Helper()
	s := xdstest.NewServer(tb)
	(&generators.SidecarGenerators{Endpoints: idx, Discovery: env.ServiceDiscovery()}).Register(s.DS)
	s.DS.InitPushContext(env)
	return s.Addr, s.DS
}

const benchNode = "sidecar~10.1.0.0~svc-0-v1.ns-0~ns-0.svc.cluster.local"

var benchMeta = map[string]any{"NAMESPACE": "ns-0", "LABELS": map[string]any{"app": "svc-0", "version": "v1"}}

// sidecarConfig is what one sidecar fetched: resource counts and bytes by type.
type sidecarConfig struct {
	resources, bytes map[string]int
}

// fetchSidecarConfig opens a delta stream on conn and walks a sidecar's
// startup: CDS, EDS for its EDS clusters, LDS, RDS for port 8080; it counts
// what arrives without decoding it (the checking client validated the same
// config once before the timer started).
func fetchSidecarConfig(ctx context.Context, conn *grpc.ClientConn, md *structpb.Struct, edsNames []string) (sidecarConfig, error) {
	return deltaSteps(ctx, conn, []*discovery.DeltaDiscoveryRequest{
		{Node: &core.Node{Id: benchNode, Metadata: md}, TypeUrl: xds.ClusterType},
		{TypeUrl: xds.EndpointType, ResourceNamesSubscribe: edsNames},
		{TypeUrl: xds.ListenerType},
		{TypeUrl: xds.RouteType, ResourceNamesSubscribe: []string{strconv.Itoa(benchPort)}},
	})
}

// deltaSteps opens a delta stream on conn, sends each request, waits for
// its response and ACKs it; it counts what arrives without decoding it.
func deltaSteps(ctx context.Context, conn *grpc.ClientConn, steps []*discovery.DeltaDiscoveryRequest) (sidecarConfig, error) {
	out := sidecarConfig{resources: map[string]int{}, bytes: map[string]int{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		return out, err
	}
	for _, req := range steps {
		if err := stream.Send(req); err != nil {
			return out, err
		}
		resp, err := stream.Recv()
		if err != nil {
			return out, err
		}
		if resp.TypeUrl != req.TypeUrl {
			return out, fmt.Errorf("asked for %s, got %s", req.TypeUrl, resp.TypeUrl)
		}
		for _, r := range resp.Resources {
			out.resources[resp.TypeUrl]++
			out.bytes[resp.TypeUrl] += len(r.GetResource().GetValue())
		}
		if err := stream.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: resp.TypeUrl, ResponseNonce: resp.Nonce}); err != nil {
			return out, err
		}
	}
	return out, nil
}

// BenchmarkSidecarFullConfig1000Services measures one sidecar's full config
// (CDS, EDS for every EDS cluster, LDS, RDS) in a mesh of 1,000 services with
// a DestinationRule and a VirtualService each: from the stream's first
// request to the fourth response, over an in-process gRPC server.
func BenchmarkSidecarFullConfig1000Services(b *testing.B) {
	env, idx := benchEnv(b, 1000)
	addr, ds := benchServer(b, env, idx)

	// once, with the checking client: every resource decodes and passes
	// ValidateAll, and the config is the whole mesh
	c, err := adsc.Dial(context.Background(), addr, adsc.Config{NodeID: benchNode, Metadata: benchMeta, Delta: true})
	if err != nil {
		b.Fatal(err)
	}
	var edsNames []string
	for _, w := range []struct {
		t     string
		names []string
	}{{xds.ClusterType, nil}, {xds.EndpointType, nil}, {xds.ListenerType, nil}, {xds.RouteType, []string{strconv.Itoa(benchPort)}}} {
		names := w.names
		if w.t == xds.EndpointType {
			for _, n := range c.State(xds.ClusterType) {
				if len(n) > 9 && n[:9] == "outbound|" {
					edsNames = append(edsNames, n)
				}
			}
			names = edsNames
		}
		if err := c.Watch(w.t, names...); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Next(time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	if got := len(c.State(xds.ClusterType)); got < 3000 {
		b.Fatalf("%d clusters, want 3 per service", got)
	}
	if got := len(c.State(xds.EndpointType)); got != len(edsNames) {
		b.Fatalf("%d endpoint assignments for %d EDS clusters", got, len(edsNames))
	}
	c.Close()

	conn, md := benchDial(b, addr, benchMeta)
	// cached: what each further sidecar of a namespace costs within one
	// snapshot; cold: the first sidecar after a full push, which builds
	// everything (the snapshot too) from scratch
	for _, cold := range []bool{false, true} {
		name := map[bool]string{false: "cached", true: "cold"}[cold]
		b.Run(name, func(b *testing.B) {
			var last sidecarConfig
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if cold {
					ds.InitPushContext(env)
				}
				if last, err = fetchSidecarConfig(context.Background(), conn, md, edsNames); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			total := 0
			for _, t := range []string{xds.ClusterType, xds.EndpointType, xds.ListenerType, xds.RouteType} {
				total += last.bytes[t]
				b.ReportMetric(float64(last.bytes[t]), xds.ShortType(t)+"-bytes")
				b.ReportMetric(float64(last.resources[t]), xds.ShortType(t)+"-resources")
			}
			b.ReportMetric(float64(total), "config-bytes")
		})
	}
}
