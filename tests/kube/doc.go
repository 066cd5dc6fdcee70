// Package kube is the integration-test harness that runs a real Kubernetes API
// server: etcd and kube-apiserver started on loopback by controller-runtime's
// envtest, from binaries that hack/testbin.sh builds once per machine from the
// Go module proxy (nothing is downloaded at test time). The harness installs
// the Istio and Gateway API CRDs of manifests/crds/ and hands out typed
// clients, a rest.Config and a kubeconfig file for the istiod binary.
//
// Two ways to get an API server:
//
//   - Start(t, opts...) starts a dedicated one for a test and stops it in
//     t.Cleanup. Use it when the test needs a pristine server or a CRD set of
//     its own (WithoutCRDs, then Env.InstallCRDs later).
//   - Shared(t) returns one server per test binary (per package), started on
//     first use with every CRD installed and stopped when the package's tests
//     end. A start costs seconds of CPU, so most tests should share. Tests on
//     a shared server isolate themselves by namespace (Env.NewNamespace) and
//     must not delete or change cluster-scoped objects others rely on (CRDs
//     in particular).
//
// Sharing needs a TestMain that calls Main, which stops the server after the
// last test (child processes would otherwise outlive the test binary):
//
//	func TestMain(m *testing.M) { kube.Main(m) }
//
// Fault tests take a server of their own (Start): Env.StopAPIServer and
// Env.StartAPIServer stop kube-apiserver and bring it back on the same
// address with the same certificates and etcd, and WithAuditLog records the
// requests it receives (Env.AuditLog), so that a test can count the lists
// and watches a client makes after the restart.
//
// No controllers run (no kube-controller-manager, no scheduler): a Deployment
// is stored but gets no Pods, a deleted Namespace stays Terminating. Tests
// create the objects controllers would (EndpointSlices, Pods) themselves.
//
// The API server authenticates the harness as an admin (system:masters) with
// a client certificate; RBAC is enforced for other users.
package kube
