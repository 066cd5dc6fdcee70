package debug_test

import (
	"context"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/debug"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

// debugRequest asks for a debug type as istioctl does: one SotW request
// with an event-generator node, and returns the response or the stream's
// error.
func debugRequest(t *testing.T, addr string, opts []grpc.DialOption, ns, typeURL string, names ...string) (*discovery.DiscoveryResponse, error) {
	t.Helper()
	if opts == nil {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	md, _ := structpb.NewStruct(map[string]any{"GENERATOR": "event", "NAMESPACE": ns, "SERVICE_ACCOUNT": "default"})
	if err := stream.Send(&discovery.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: names,
		Node: &core.Node{Id: "sidecar~10.9.9.9~istioctl." + ns + "~" + ns + ".svc.cluster.local", Metadata: md}}); err != nil {
		t.Fatal(err)
	}
	return stream.Recv()
}

// istioctl proxy-status and proxy-config read the debug types over ADS:
// only over TLS with an identity; istio-system sees every proxy, others
// their own namespace; only proxies (PROXY_CONFIG in their metadata) are
// listed, by proxy ID, with their per-type sync state.
func TestDebugTypesOverADS(t *testing.T) {
	s := xdstest.NewTLSServer(t)
	s.DS.RegisterGenerator(xds.ClusterType, xds.GeneratorFunc(oneCluster))
	(&debug.XDSGenerators{Server: s.DS, SystemNamespace: "istio-system"}).Register()
	s.DS.SetAuthenticator(xdstest.TokenIdentity)
	s.DS.SetPushContext(model.NewPushContext())
	proxy := xdstest.Dial(t, s.Server, adsc.Config{NodeID: "sidecar~10.244.0.10~productpage-v1-abc.bookinfo~bookinfo.svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": "bookinfo", "CLUSTER_ID": "Kubernetes", "ISTIO_VERSION": "1.31.0", "PROXY_CONFIG": map[string]any{}}})
	if err := proxy.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, proxy)

	if _, err := debugRequest(t, s.Addr, nil, "istio-system", debug.TypeDebugSyncz); status.Code(err) != codes.Unauthenticated ||
		status.Convert(err).Message() != "authentication required" {
		t.Errorf("plaintext syncz: %v, want Unauthenticated authentication required", err)
	}
	for _, c := range []struct {
		ns   string
		want int
	}{{"istio-system", 1}, {"bookinfo", 1}, {"elsewhere", 0}} {
		resp, err := debugRequest(t, s.TLSAddr, s.DialOptions(c.ns+"/default"), c.ns, debug.TypeDebugSyncz)
		if err != nil {
			t.Fatalf("%s: %v", c.ns, err)
		}
		if len(resp.Resources) != c.want {
			t.Errorf("%s sees %d proxies, want %d", c.ns, len(resp.Resources), c.want)
			continue
		}
		if c.want == 0 {
			continue
		}
		cc := &statusv3.ClientConfig{}
		if err := resp.Resources[0].UnmarshalTo(cc); err != nil {
			t.Fatal(err)
		}
		md := cc.GetNode().GetMetadata().AsMap()
		if cc.Node.Id != "productpage-v1-abc.bookinfo" || md["ISTIO_VERSION"] != "1.31.0" || md["CLUSTER_ID"] != "Kubernetes" || md["NAMESPACE"] != "bookinfo" {
			t.Errorf("node %v", cc.Node)
		}
		if x := cc.GetGenericXdsConfigs(); len(x) != 1 || x[0].TypeUrl != xds.ClusterType || x[0].ConfigStatus != statusv3.ConfigStatus_SYNCED || x[0].LastUpdated == nil {
			t.Errorf("xds configs %v", x)
		}
	}
	// config_dump of a proxy: its own namespace or istio-system only
	resp, err := debugRequest(t, s.TLSAddr, s.DialOptions("bookinfo/default"), "bookinfo", debug.TypeDebugConfigDump, "productpage-v1-abc.bookinfo")
	if err != nil || len(resp.Resources) != 7 { // the sections of Istio's dump
		t.Fatalf("config_dump: %v %v", resp, err)
	}
	if _, err := debugRequest(t, s.TLSAddr, s.DialOptions("elsewhere/default"), "elsewhere", debug.TypeDebugConfigDump, "productpage-v1-abc.bookinfo"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("config_dump from another namespace: %v", err)
	}
}

// istioctl x internal-debug asks for any debug endpoint over ADS as the
// type istio.io/debug: the body of the endpoint comes back as the value of
// an Any of that type; other namespaces than the system's may ask only for
// config_dump, edsz and ndsz of their own proxies.
func TestDebugEndpointsOverADS(t *testing.T) {
	s := xdstest.NewTLSServer(t)
	s.DS.RegisterGenerator(xds.ClusterType, xds.GeneratorFunc(oneCluster))
	s.DS.SetAuthenticator(xdstest.TokenIdentity)
	s.DS.SetPushContext(model.NewPushContext())
	debug.New(debug.Options{XDS: s.DS}).RegisterXDS(s.DS, "istio-system")
	proxy := xdstest.Dial(t, s.Server, adsc.Config{NodeID: "sidecar~10.244.0.10~productpage-v1-abc.bookinfo~bookinfo.svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": "bookinfo", "CLUSTER_ID": "Kubernetes", "PROXY_CONFIG": map[string]any{}}})
	if err := proxy.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, proxy)

	if _, err := debugRequest(t, s.Addr, nil, "istio-system", debug.TypeDebug, "syncz"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("plaintext: %v, want Unauthenticated", err)
	}
	resp, err := debugRequest(t, s.TLSAddr, s.DialOptions("istio-system/default"), "istio-system", debug.TypeDebug, "syncz")
	if err != nil || len(resp.Resources) != 1 {
		t.Fatalf("syncz: %v %v", resp, err)
	}
	a := resp.Resources[0]
	if a.TypeUrl != debug.TypeDebug || !strings.Contains(string(a.Value), `"proxy": "productpage-v1-abc.bookinfo"`) {
		t.Errorf("syncz over ADS: %s %s", a.TypeUrl, a.Value)
	}
	for _, c := range []struct {
		ns    string
		names []string
		want  codes.Code
	}{
		{"bookinfo", []string{"syncz"}, codes.PermissionDenied},
		{"bookinfo", []string{"config_dump?proxyID=productpage-v1-abc.bookinfo"}, codes.OK},
		{"istio-system", []string{"syncz", "adsz"}, codes.InvalidArgument},
	} {
		resp, err := debugRequest(t, s.TLSAddr, s.DialOptions(c.ns+"/default"), c.ns, debug.TypeDebug, c.names...)
		if status.Code(err) != c.want {
			t.Errorf("%s as %s: %v, want %v", c.names, c.ns, err, c.want)
			continue
		}
		if c.want == codes.OK && (len(resp.Resources) != 1 || !strings.Contains(string(resp.Resources[0].Value), "ClustersConfigDump")) {
			t.Errorf("%s as %s: %v", c.names, c.ns, resp)
		}
	}
	// another namespace's proxy is not found
	resp, err = debugRequest(t, s.TLSAddr, s.DialOptions("elsewhere/default"), "elsewhere", debug.TypeDebug, "edsz?proxyID=productpage-v1-abc.bookinfo")
	if err != nil || len(resp.Resources) != 1 || !strings.Contains(string(resp.Resources[0].Value), "not connected") {
		t.Errorf("edsz of another namespace's proxy: %v %v", resp, err)
	}
}

// A rejected response is an ERROR in proxy-status, with the proxy's
// detail; the types are listed by type URL.
func TestSynczOverADSReportsRejections(t *testing.T) {
	s := xdstest.NewTLSServer(t)
	s.DS.RegisterGenerator(xds.ClusterType, xds.GeneratorFunc(oneCluster))
	s.DS.RegisterGenerator(xds.ListenerType, xds.GeneratorFunc(func(*model.Proxy, *xds.WatchedResource, *model.PushRequest) (xds.Generated, error) {
		return xds.Generated{}, nil
	}))
	(&debug.XDSGenerators{Server: s.DS, SystemNamespace: "istio-system"}).Register()
	s.DS.SetAuthenticator(xdstest.TokenIdentity)
	s.DS.SetPushContext(model.NewPushContext())
	proxy := xdstest.Dial(t, s.Server, adsc.Config{NoAutoACK: true, Metadata: map[string]any{"NAMESPACE": "default", "PROXY_CONFIG": map[string]any{}}})
	for _, typ := range []string{xds.ListenerType, xds.ClusterType} {
		if err := proxy.Watch(typ); err != nil {
			t.Fatal(err)
		}
		r := xdstest.Next(t, proxy)
		if r.TypeURL == xds.ClusterType {
			err := proxy.NACK(r, "cluster rejected")
			if err != nil {
				t.Fatal(err)
			}
		} else if err := proxy.ACK(r); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(xdstest.Timeout)
	for {
		resp, err := debugRequest(t, s.TLSAddr, s.DialOptions("istio-system/default"), "istio-system", debug.TypeDebugSyncz)
		if err != nil || len(resp.Resources) != 1 {
			t.Fatalf("syncz: %v %v", resp, err)
		}
		cc := &statusv3.ClientConfig{}
		if err := resp.Resources[0].UnmarshalTo(cc); err != nil {
			t.Fatal(err)
		}
		x := cc.GetGenericXdsConfigs()
		if len(x) == 2 && x[0].TypeUrl == xds.ClusterType && x[1].TypeUrl == xds.ListenerType &&
			x[0].ConfigStatus == statusv3.ConfigStatus_ERROR && x[0].GetErrorState().GetDetails() == "cluster rejected" &&
			x[1].ConfigStatus == statusv3.ConfigStatus_SYNCED {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("syncz: %v", x)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
