package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	xdsgrpc "google.golang.org/grpc/xds"
)

const grpcServerMesh = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: xsrv, namespace: test}
spec:
  hosts: [xsrv.test.svc.cluster.local]
  addresses: [10.99.0.2]
  ports: [{number: 7071, name: grpc, protocol: GRPC}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: xsrv}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: xsrv-1, namespace: test}
spec: {address: 127.0.0.1, ports: {grpc: %d}, labels: {app: xsrv}}
`

// grpcBootstrap is the bootstrap of a proxyless gRPC workload (client or
// server) of namespace test at 127.0.0.1.
func grpcBootstrap(istiod, pod string) []byte {
	return []byte(fmt.Sprintf(`{"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
		"node": {"id": "sidecar~127.0.0.1~%s.test~test.svc.cluster.local", "metadata": {"GENERATOR": "grpc", "NAMESPACE": "test", "LABELS": {"app": "xsrv"}}},
		"server_listener_resource_name_template": "xds.istio.io/grpc/lds/inbound/%%s"}`, istiod, pod))
}

// xdsClient is a proxyless gRPC client (client-1 of namespace test) of
// target through istiod's xDS, closed when the test ends.
func xdsClient(t *testing.T, d *daemon, target string) testpb.TestServiceClient {
	t.Helper()
	resolver, err := xdsgrpc.NewXDSResolverWithConfigForTesting(grpcBootstrap(d.grpc, "client-1"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("xds:///"+target, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(resolver))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return testpb.NewTestServiceClient(conn)
}

// A real grpc-go xDS server (xds.NewGRPCServer) gets its listener from our
// istiod: it only serves once that listener arrives, then a real xDS client
// reaches it through the service.
func TestProxylessGRPCServerThroughIstiod(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mesh.yaml"), fmt.Sprintf(grpcServerMesh, port))
	d := start(t, "--configDir", dir, "--meshConfig", filepath.Join(dir, "no-mesh"))
	d.waitReady(t)

	// every serving mode change, checked on the test goroutine
	var (
		mu      sync.Mutex
		changes []xdsgrpc.ServingModeChangeArgs
	)
	changed := make(chan struct{}, 1)
	srv, err := xdsgrpc.NewGRPCServer(grpc.Creds(insecure.NewCredentials()),
		xdsgrpc.BootstrapContentsForTesting(grpcBootstrap(d.grpc, "xsrv-1")),
		xdsgrpc.ServingModeCallback(func(_ net.Addr, a xdsgrpc.ServingModeChangeArgs) {
			mu.Lock()
			changes = append(changes, a)
			mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	testpb.RegisterTestServiceServer(srv, &backend{name: "xds-server"})
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatalf("the xDS server never got its listener\n%s", d.logs())
	}
	mu.Lock()
	first := changes[0]
	mu.Unlock()
	if first.Mode != connectivity.ServingModeServing || first.Err != nil {
		t.Fatalf("first serving mode %v (error %v), want SERVING\n%s", first.Mode, first.Err, d.logs())
	}

	client := xdsClient(t, d, "xsrv.test.svc.cluster.local:7071")
	eventually(t, "an RPC served by the xDS server", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := client.UnaryCall(ctx, &testpb.SimpleRequest{}, grpc.WaitForReady(true))
		if err != nil {
			return false, err.Error()
		}
		return resp.Hostname == "xds-server", resp.Hostname
	})
	// the server kept serving: no change to NOT_SERVING, no listener error
	mu.Lock()
	defer mu.Unlock()
	for i, c := range changes {
		if c.Mode != connectivity.ServingModeServing || c.Err != nil {
			t.Errorf("serving mode change %d: %v (error %v), want SERVING throughout\n%s", i, c.Mode, c.Err, d.logs())
		}
	}
}
