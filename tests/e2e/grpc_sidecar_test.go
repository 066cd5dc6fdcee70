package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// A Sidecar that leaves a service out of a proxyless client's scope takes
// its listener away, as Istio's config does: the real grpc-go client's RPCs
// then fail UNAVAILABLE (no listener for the target), and succeed again
// once the Sidecar is gone.
func TestProxylessGRPCSidecarScope(t *testing.T) {
	p1, p2 := startBackend(t, "v1"), startBackend(t, "v2")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mesh.yaml"), fmt.Sprintf(grpcMesh, p1, p2))
	d := start(t, "--configDir", dir, "--meshConfig", filepath.Join(dir, "no-mesh"))
	d.waitReady(t)
	client := xdsClient(t, d, "echo.test.svc.cluster.local:7070")
	call := func(wait bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var opts []grpc.CallOption
		if wait {
			opts = append(opts, grpc.WaitForReady(true))
		}
		_, err := client.UnaryCall(ctx, &testpb.SimpleRequest{}, opts...)
		return err
	}
	eventually(t, "first RPC", func() (bool, string) { err := call(true); return err == nil, fmt.Sprint(err) })

	// the namespace's Sidecar imports only istio-system: echo leaves the scope
	sidecar := `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: test}
spec:
  egress: [{hosts: ["istio-system/*"]}]
`
	writeFile(t, filepath.Join(dir, "sidecar.yaml"), sidecar)
	eventually(t, "RPCs fail once echo is out of scope", func() (bool, string) {
		err := call(false)
		return status.Code(err) == codes.Unavailable, fmt.Sprint(err)
	})
	if err := os.Remove(filepath.Join(dir, "sidecar.yaml")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "RPCs succeed again without the Sidecar", func() (bool, string) { err := call(true); return err == nil, fmt.Sprint(err) })
}
