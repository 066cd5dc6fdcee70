package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// backend is a real gRPC server that answers with its name.
type backend struct {
	testpb.UnimplementedTestServiceServer
	name string
}

func (b *backend) UnaryCall(context.Context, *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return &testpb.SimpleResponse{Hostname: b.name}, nil
}

func startBackend(t *testing.T, name string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	testpb.RegisterTestServiceServer(s, &backend{name: name})
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return l.Addr().(*net.TCPAddr).Port
}

const grpcMesh = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: echo, namespace: test}
spec:
  hosts: [echo.test.svc.cluster.local]
  addresses: [10.99.0.1]
  ports: [{number: 7070, name: grpc, protocol: GRPC}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: echo}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: echo-v1, namespace: test}
spec: {address: 127.0.0.1, ports: {grpc: %d}, labels: {app: echo, version: v1}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: echo-v2, namespace: test}
spec: {address: 127.0.0.1, ports: {grpc: %d}, labels: {app: echo, version: v2}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: echo, namespace: test}
spec:
  host: echo.test.svc.cluster.local
  subsets: [{name: v1, labels: {version: v1}}, {name: v2, labels: {version: v2}}]
`

const grpcRoutes = `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: echo, namespace: test}
spec:
  hosts: [echo.test.svc.cluster.local]
  http:
  %s
`

// A real grpc-go xDS client dials xds:///echo.test.svc.cluster.local:7070
// through our istiod: an 80/20 split between subsets shows in RPC counts, a
// fault abort shows as the configured status, and a config change reroutes
// live traffic.
func TestProxylessGRPCThroughIstiod(t *testing.T) {
	p1, p2 := startBackend(t, "v1"), startBackend(t, "v2")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mesh.yaml"), fmt.Sprintf(grpcMesh, p1, p2))
	split := `- route: [{destination: {host: echo.test.svc.cluster.local, subset: v1}, weight: 80}, {destination: {host: echo.test.svc.cluster.local, subset: v2}, weight: 20}]`
	writeFile(t, filepath.Join(dir, "routes.yaml"), fmt.Sprintf(grpcRoutes, split))
	d := start(t, "--configDir", dir, "--meshConfig", filepath.Join(dir, "no-mesh"))
	d.waitReady(t)

	client := xdsClient(t, d, "echo.test.svc.cluster.local:7070")

	count := func(n int) (map[string]int, error) {
		got := map[string]int{}
		for i := 0; i < n; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp, err := client.UnaryCall(ctx, &testpb.SimpleRequest{})
			cancel()
			if err != nil {
				got[status.Code(err).String()]++
				continue
			}
			got[resp.Hostname]++
		}
		return got, nil
	}
	// wait for the first successful RPC (the client fetches LDS, RDS, CDS, EDS)
	eventually(t, "first RPC", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := client.UnaryCall(ctx, &testpb.SimpleRequest{}, grpc.WaitForReady(true))
		return err == nil, fmt.Sprint(err)
	})
	got, _ := count(1000)
	t.Logf("1000 RPCs with an 80/20 split: %v", got)
	// 80/20 within a generous tolerance (binomial sd is ~13 for n=1000)
	if got["v1"] < 720 || got["v1"] > 880 || got["v1"]+got["v2"] != 1000 {
		t.Errorf("80/20 split: %v", got)
	}

	// fault abort: every call fails with the configured status. grpc-go
	// itself answers UNAVAILABLE for a missing listener, route or cluster,
	// so the fault uses a status only the fault filter produces.
	abort := `- fault: {abort: {percentage: {value: 100}, grpcStatus: RESOURCE_EXHAUSTED}}
    route: [{destination: {host: echo.test.svc.cluster.local, subset: v1}}]`
	writeFile(t, filepath.Join(dir, "routes.yaml"), fmt.Sprintf(grpcRoutes, abort))
	eventually(t, "fault abort applied", func() (bool, string) {
		got, _ := count(20)
		return got[codes.ResourceExhausted.String()] == 20, fmt.Sprint(got)
	})

	// reroute live traffic to v2
	all2 := `- route: [{destination: {host: echo.test.svc.cluster.local, subset: v2}}]`
	writeFile(t, filepath.Join(dir, "routes.yaml"), fmt.Sprintf(grpcRoutes, all2))
	eventually(t, "traffic moved to v2", func() (bool, string) {
		got, _ := count(20)
		return got["v2"] == 20, fmt.Sprint(got)
	})
}
