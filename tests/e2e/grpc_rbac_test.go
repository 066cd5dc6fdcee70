package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	xdsgrpc "google.golang.org/grpc/xds"
)

// rbacBackend answers the two methods the policies of TestProxylessGRPCServerRBAC
// tell apart.
type rbacBackend struct {
	testpb.UnimplementedTestServiceServer
}

func (rbacBackend) UnaryCall(context.Context, *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return &testpb.SimpleResponse{Hostname: "rbac-server"}, nil
}

func (rbacBackend) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

// grpcRBACPolicy denies one method of the server (app: xsrv) and allows the
// methods of its service with a path template.
const grpcRBACPolicy = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-method, namespace: test}
spec:
  selector: {matchLabels: {app: xsrv}}
  action: DENY
  rules: [{to: [{operation: {paths: ["/grpc.testing.TestService/%s"]}}]}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: allow-test-service, namespace: test}
spec:
  selector: {matchLabels: {app: xsrv}}
  rules: [{to: [{operation: {paths: ["/grpc.testing.TestService/{*}"]}}]}]
`

// grpcRBACAllowOnly allows one method only.
const grpcRBACAllowOnly = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: allow-unary, namespace: test}
spec:
  selector: {matchLabels: {app: xsrv}}
  rules: [{to: [{operation: {paths: ["/grpc.testing.TestService/UnaryCall"]}}]}]
`

// grpcRBACClaims denies requests whose JWT group claim is not admins.
const grpcRBACClaims = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-non-admins, namespace: test}
spec:
  selector: {matchLabels: {app: xsrv}}
  action: DENY
  rules: [{when: [{key: "request.auth.claims[group]", notValues: ["admins"]}]}]
`

// A real grpc-go xDS server enforces the AuthorizationPolicies istiod puts
// on its inbound listener: a DENY on one method fails that RPC with
// PermissionDenied (grpc-go's RBAC naming Istio's proxyless policy name)
// while the other method, allowed by a path template, is served; editing
// the watched policy file flips which method is denied; an ALLOW on one
// method denies the other; a JWT claim condition, which Istio's shape would
// crash grpc-go with, is read as on a sidecar without a token. The server
// never NACKs a listener and never stops serving.
func TestProxylessGRPCServerRBAC(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mesh.yaml"), fmt.Sprintf(grpcServerMesh, port))
	policy := filepath.Join(dir, "policy.yaml")
	writeFile(t, policy, fmt.Sprintf(grpcRBACPolicy, "UnaryCall"))
	d := start(t, "--configDir", dir, "--meshConfig", filepath.Join(dir, "no-mesh"))
	d.waitReady(t)

	var (
		mu      sync.Mutex
		changes []xdsgrpc.ServingModeChangeArgs
	)
	srv, err := xdsgrpc.NewGRPCServer(grpc.Creds(insecure.NewCredentials()),
		xdsgrpc.BootstrapContentsForTesting(grpcBootstrap(d.grpc, "xsrv-1")),
		xdsgrpc.ServingModeCallback(func(_ net.Addr, a xdsgrpc.ServingModeChangeArgs) {
			mu.Lock()
			changes = append(changes, a)
			mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	testpb.RegisterTestServiceServer(srv, rbacBackend{})
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)

	client := xdsClient(t, d, "xsrv.test.svc.cluster.local:7071")

	// call makes one RPC and says how it ended: "OK" or the status code and
	// message.
	call := func(method string) (codes.Code, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		switch method {
		case "UnaryCall":
			_, err = client.UnaryCall(ctx, &testpb.SimpleRequest{}, grpc.WaitForReady(true))
		case "EmptyCall":
			_, err = client.EmptyCall(ctx, &testpb.Empty{}, grpc.WaitForReady(true))
		}
		st := status.Convert(err)
		return st.Code(), st.Message()
	}
	// expect waits until the methods end as wanted (the server picks up a
	// new listener and drains the connections of the old one, so a change
	// takes a moment); want is a code and a part of its message.
	type outcome struct {
		code codes.Code
		msg  string
	}
	expect := func(what string, want map[string]outcome) {
		t.Helper()
		eventually(t, what, func() (bool, string) {
			var got []string
			ok := true
			for _, m := range []string{"UnaryCall", "EmptyCall"} {
				code, msg := call(m)
				got = append(got, fmt.Sprintf("%s: %v %q", m, code, msg))
				if code != want[m].code || !strings.Contains(msg, want[m].msg) {
					ok = false
				}
			}
			return ok, strings.Join(got, "; ")
		})
	}
	served := outcome{code: codes.OK}
	denied := func(policy string) outcome {
		return outcome{code: codes.PermissionDenied, msg: fmt.Sprintf("matched a deny policy %q", policy)}
	}

	expect("UnaryCall denied, EmptyCall served", map[string]outcome{"UnaryCall": denied("test-deny-method-0"), "EmptyCall": served})

	writeFile(t, policy, fmt.Sprintf(grpcRBACPolicy, "EmptyCall"))
	expect("after the edit: UnaryCall served, EmptyCall denied", map[string]outcome{"UnaryCall": served, "EmptyCall": denied("test-deny-method-0")})

	writeFile(t, policy, grpcRBACAllowOnly)
	expect("allowing UnaryCall only", map[string]outcome{"UnaryCall": served,
		"EmptyCall": {code: codes.PermissionDenied, msg: "did not match an allow policy"}})

	// Istio sends a not_id directly over the claim's metadata matcher here,
	// on which grpc-go's RBAC engine panics and takes the server down; ours
	// reads the claim as absent (no jwt_authn on a proxyless server), so
	// "group is not admins" holds for every request, as on a sidecar.
	writeFile(t, policy, grpcRBACClaims)
	expect("denying requests whose JWT group is not admins", map[string]outcome{
		"UnaryCall": denied("test-deny-non-admins-0"), "EmptyCall": denied("test-deny-non-admins-0")})

	if strings.Contains(d.logs(), "rejected lds") {
		t.Errorf("the server rejected a listener:\n%s", d.logs())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changes) == 0 {
		t.Error("no serving mode change")
	}
	for i, c := range changes {
		if c.Mode != connectivity.ServingModeServing || c.Err != nil {
			t.Errorf("serving mode change %d: %v (error %v), want SERVING throughout\n%s", i, c.Mode, c.Err, d.logs())
		}
	}
}
