package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
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

	modes := make(chan connectivity.ServingMode, 8)
	srv, err := xdsgrpc.NewGRPCServer(grpc.Creds(insecure.NewCredentials()),
		xdsgrpc.BootstrapContentsForTesting(grpcBootstrap(d.grpc, "xsrv-1")),
		xdsgrpc.ServingModeCallback(func(_ net.Addr, a xdsgrpc.ServingModeChangeArgs) {
			if a.Err != nil {
				t.Logf("serving mode %v: %v", a.Mode, a.Err)
			}
			modes <- a.Mode
		}))
	if err != nil {
		t.Fatal(err)
	}
	testpb.RegisterTestServiceServer(srv, &backend{name: "xds-server"})
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	select {
	case m := <-modes:
		if m != connectivity.ServingModeServing {
			t.Fatalf("first serving mode %v, want SERVING\n%s", m, d.logs())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the xDS server never got its listener\n%s", d.logs())
	}

	resolver, err := xdsgrpc.NewXDSResolverWithConfigForTesting(grpcBootstrap(d.grpc, "client-1"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("xds:///xsrv.test.svc.cluster.local:7071", grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(resolver))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := testpb.NewTestServiceClient(conn)
	eventually(t, "an RPC served by the xDS server", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := client.UnaryCall(ctx, &testpb.SimpleRequest{}, grpc.WaitForReady(true))
		if err != nil {
			return false, err.Error()
		}
		return resp.Hostname == "xds-server", resp.Hostname
	})
}
