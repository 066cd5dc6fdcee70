package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	xdsgrpc "google.golang.org/grpc/xds"
	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/tests/istiobin"
	"github.com/meshplane/istiod/tests/kube"
	"github.com/meshplane/istiod/tests/testproc"
)

// agentRuns numbers the agents' pods of this process, so that each gets a
// pod IP of its own (objects outlive the tests on the shared API server).
// 10.206/16 is used by no other test of this package.
var agentRuns atomic.Int32

// echoServer is a plain gRPC server on loopback that answers with its name:
// the backend a proxyless client reaches once xDS told it where.
type echoServer struct {
	testpb.UnimplementedTestServiceServer
	name string
}

func (e *echoServer) UnaryCall(context.Context, *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return &testpb.SimpleResponse{Hostname: e.name}, nil
}

// startEchoServer serves on 127.0.0.1:<free port> until the test ends and
// returns the port.
func startEchoServer(t testing.TB, name string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	testpb.RegisterTestServiceServer(s, &echoServer{name: name})
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return l.Addr().(*net.TCPAddr).Port
}

// createGRPCService registers, through the API server, a gRPC service
// <name>.<ns>.svc.cluster.local on port servicePort whose one endpoint is a
// ready pod with IP 127.0.0.1 (no kubelet runs, the test writes its status)
// listening on targetPort. The API server refuses loopback addresses in an
// EndpointSlice ("may not be in the loopback range"), so the service is a
// ServiceEntry whose workloadSelector selects the pod, the Kubernetes form
// of the WorkloadEntry at 127.0.0.1 that tests/e2e/grpc_test.go uses.
func createGRPCService(t testing.TB, env *kube.Env, ns, name string, servicePort int32, targetPort int) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-v1", Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{ServiceAccountName: name, Containers: []corev1.Container{{Name: "app", Image: "example/echo",
			Ports: []corev1.ContainerPort{{Name: "grpc", ContainerPort: int32(targetPort)}}}}}}
	created, err := env.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if _, err := env.Kube.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	se := &clientnetworking.ServiceEntry{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: networking.ServiceEntry{Hosts: []string{name + "." + ns + ".svc.cluster.local"},
			Ports:            []*networking.ServicePort{{Number: uint32(servicePort), Name: "grpc", Protocol: "GRPC", TargetPort: uint32(targetPort)}},
			WorkloadSelector: &networking.WorkloadSelector{Labels: labels},
			Resolution:       networking.ServiceEntry_STATIC, Location: networking.ServiceEntry_MESH_INTERNAL}}
	if _, err := env.Istio.NetworkingV1().ServiceEntries(ns).Create(ctx, se, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createAgentPod creates the running pod a proxyless agent pretends to be
// (so that istiod can join its proxy to a pod) and returns the agent's
// options for it: its token from the TokenRequest API, the published root,
// and ISTIOD_SAN for an istiod whose namespace is istiodNS.
func createAgentPod(t testing.TB, env *kube.Env, istiodNS, secureAddr, ns, pod, ip, sa string, labels map[string]string, rootPEM string) istiobin.AgentOptions {
	t.Helper()
	token := istiobin.ServiceAccountToken(t, env.Kube, ns, sa, "istio-ca")
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{ServiceAccountName: sa, Containers: []corev1.Container{{Name: "app", Image: "example/client"}}}}
	ctx := context.Background()
	created, err := env.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if _, err := env.Kube.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return istiobin.AgentOptions{
		DiscoveryAddress: secureAddr, PodName: pod, Namespace: ns, ServiceAccount: sa,
		Token: token, RootCert: []byte(rootPEM), Labels: labels, InstanceIP: ip,
		IstiodSAN: "istiod." + istiodNS + ".svc", AppContainers: "app", WorkloadName: labels["app"],
	}
}

// rootCertPEM waits for istio-ca-root-cert in ns and returns its root.
func rootCertPEM(t testing.TB, env *kube.Env, ns string) string {
	t.Helper()
	var root string
	testproc.Eventually(t, 30*time.Second, "istio-ca-root-cert in "+ns, func() (bool, string) {
		cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "istio-ca-root-cert", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		root = cm.Data["root-cert.pem"]
		return root != "", fmt.Sprint(cm.Data)
	})
	return root
}

// agentProc is a running pilot-agent.
type agentProc struct {
	cmd    *exec.Cmd
	dir    string
	log    *syncBuffer
	exited chan struct{}
}

// startAgent starts Istio's pilot-agent in a prepared directory; it is
// stopped (SIGTERM, then kill) when the test ends.
func startAgent(t testing.TB, opts istiobin.AgentOptions) *agentProc {
	t.Helper()
	a := prepareAgent(t, opts)
	a.start(t)
	return a
}

// prepareAgent prepares the agent's directory and command, not started.
func prepareAgent(t testing.TB, opts istiobin.AgentOptions) *agentProc {
	t.Helper()
	cmd, dir := istiobin.AgentCommand(t, opts)
	a := &agentProc{cmd: cmd, dir: dir, log: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = a.log, a.log
	return a
}

func (a *agentProc) start(t testing.TB) {
	t.Helper()
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("starting pilot-agent: %v", err)
	}
	go func() {
		_ = a.cmd.Wait()
		close(a.exited)
	}()
	t.Cleanup(a.stop)
}

func (a *agentProc) stop() { testproc.Stop(a.cmd.Process, a.exited, 10*time.Second) }

// alive fails with the agent's log when it has exited.
func (a *agentProc) alive() (bool, string) {
	select {
	case <-a.exited:
		return false, fmt.Sprintf("pilot-agent exited (%v):\n%s", a.cmd.ProcessState, a.log.String())
	default:
		return true, ""
	}
}

func (a *agentProc) path(rel string) string { return filepath.Join(a.dir, filepath.FromSlash(rel)) }

// pemCerts parses every CERTIFICATE block of data.
func pemCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out, nil
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %q", b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}

// localBootstrap is the agent's gRPC bootstrap made usable from outside its
// root: the socket and the certificate files at their real paths.
func localBootstrap(t *testing.T, a *agentProc) ([]byte, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(a.path(istiobin.GRPCBootstrapPath))
	if err != nil {
		t.Fatal(err)
	}
	var b map[string]any
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("grpc-bootstrap.json: %v\n%s", err, raw)
	}
	servers, _ := b["xds_servers"].([]any)
	if len(servers) != 1 {
		t.Fatalf("grpc-bootstrap.json has %d xds_servers:\n%s", len(servers), raw)
	}
	server := servers[0].(map[string]any)
	if got := server["server_uri"]; got != "unix:///"+istiobin.XDSSocketPath {
		t.Errorf("bootstrap server_uri %v, want unix:///%s (Istio's relative path)", got, istiobin.XDSSocketPath)
	}
	server["server_uri"] = "unix://" + istiobin.XDSSocket(a.dir)
	if p, ok := b["certificate_providers"].(map[string]any)["default"].(map[string]any); ok {
		if cfg, ok := p["config"].(map[string]any); ok {
			for _, k := range []string{"certificate_file", "private_key_file", "ca_certificate_file"} {
				if s, ok := cfg[k].(string); ok && !filepath.IsAbs(s) {
					cfg[k] = a.path(s)
				}
			}
		}
	}
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	node, _ := b["node"].(map[string]any)
	return out, node
}

// runIstioctl runs an istioctl command (at most a minute) and returns its
// combined output.
func runIstioctl(t *testing.T, cmd *exec.Cmd) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Env = cmd.Env
	out, err := c.CombinedOutput()
	return string(out), err
}

var spaces = regexp.MustCompile(`\s+`)

// A real Istio pilot-agent, proxyless (Istio's grpc-agent template), against
// istiod's TLS port with a real service-account token: it gets its
// workload certificate from the CA and proxies xDS over TLS for a real
// grpc-go xDS client, whose RPCs reach a loopback server registered through
// the API server; the real istioctl proxy-status lists the proxy.
func TestIstioAgentGetsCertificateAndConfigOverTLS(t *testing.T) {
	env := kube.Shared(t)
	istiodNS := env.NewNamespace(t, nil).Name
	app := env.NewNamespace(t, nil).Name
	other := env.NewNamespace(t, nil).Name
	// POD_NAME, istioctl's ISTIOD column
	istiodPod := fmt.Sprintf("istiod-agent-%d", agentRuns.Add(1))
	d := startIstiod(t, env, istiodNS, func(a *bootstrap.PilotArgs) { a.PodName = istiodPod })
	secure := d.srv.SecureGRPCAddr()

	echoPort := startEchoServer(t, "echo-v1")
	createGRPCService(t, env, app, "echo", 7070, echoPort)
	rootPEM := rootCertPEM(t, env, app)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(rootPEM)) {
		t.Fatalf("istio-ca-root-cert holds no certificate: %q", rootPEM)
	}
	rootDER, _ := pem.Decode([]byte(rootPEM))

	const sa = "client"
	pod := "client-v1-abc"
	ip := fmt.Sprintf("10.206.%d.1", agentRuns.Add(1))
	opts := createAgentPod(t, env, istiodNS, secure, app, pod, ip, sa, map[string]string{"app": "client"}, rootPEM)
	agent := startAgent(t, opts)
	// on failure, the agent's log and istiod's view of the streams, while
	// they are still open (registered again after the client's Close)
	dumped := false
	dump := func() {
		if !t.Failed() || dumped {
			return
		}
		dumped = true
		_, adsz := d.get("/debug/adsz")
		_, syncz := d.get("/debug/syncz")
		t.Logf("pilot-agent log:\n%s\nistiod /debug/adsz:\n%s\nistiod /debug/syncz:\n%s", agent.log.String(), adsz, syncz)
	}
	t.Cleanup(dump)

	// (1) the workload certificate, in OUTPUT_CERTS
	var chainPEM, keyPEM, rootFile []byte
	testproc.Eventually(t, time.Minute, "certificates in OUTPUT_CERTS", func() (bool, string) {
		if ok, detail := agent.alive(); !ok {
			t.Fatal(detail)
		}
		var errs []string
		read := func(name string) []byte {
			b, err := os.ReadFile(agent.path(istiobin.OutputCertsDir + "/" + name))
			if err != nil || len(b) == 0 {
				errs = append(errs, fmt.Sprintf("%s: %v (%d bytes)", name, err, len(b)))
			}
			return b
		}
		chainPEM, keyPEM, rootFile = read("cert-chain.pem"), read("key.pem"), read("root-cert.pem")
		return len(errs) == 0, strings.Join(errs, "; ")
	})
	chain, err := pemCerts(chainPEM)
	if err != nil || len(chain) != 2 {
		t.Fatalf("cert-chain.pem: %d certificates (%v), want leaf then root:\n%s", len(chain), err, chainPEM)
	}
	leaf := chain[0]
	want := "spiffe://cluster.local/ns/" + app + "/sa/" + sa
	if len(leaf.URIs) != 1 || leaf.URIs[0].String() != want || len(leaf.DNSNames)+len(leaf.IPAddresses)+len(leaf.EmailAddresses) != 0 {
		t.Errorf("leaf SANs: URIs %v DNS %v IPs %v emails %v; want exactly the URI %s",
			leaf.URIs, leaf.DNSNames, leaf.IPAddresses, leaf.EmailAddresses, want)
	}
	if leaf.IsCA {
		t.Error("the workload certificate is a CA")
	}
	if !bytes.Equal(chain[1].Raw, rootDER.Bytes) {
		t.Errorf("cert-chain.pem's second certificate (subject %q) is not the root of istio-ca-root-cert", chain[1].Subject)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the leaf does not chain to istio-ca-root-cert: %v", err)
	}
	if files, err := pemCerts(rootFile); err != nil || len(files) != 1 || !bytes.Equal(files[0].Raw, rootDER.Bytes) {
		t.Errorf("root-cert.pem is not the published root (%d certificates, %v)", len(files), err)
	}
	if _, err := tls.X509KeyPair(chainPEM, keyPEM); err != nil {
		t.Errorf("key.pem does not match the leaf: %v", err)
	}

	// (2) the bootstrap, and a grpc-go xDS client through the agent's socket
	testproc.Eventually(t, 30*time.Second, "grpc-bootstrap.json and the XDS socket", func() (bool, string) {
		if ok, detail := agent.alive(); !ok {
			t.Fatal(detail)
		}
		_, e1 := os.Stat(agent.path(istiobin.GRPCBootstrapPath))
		_, e2 := os.Stat(istiobin.XDSSocket(agent.dir))
		return e1 == nil && e2 == nil, fmt.Sprint(e1, e2)
	})
	bootstrap, node := localBootstrap(t, agent)
	wantNode := "sidecar~" + ip + "~" + pod + "." + app + "~" + app + ".svc.cluster.local"
	if node["id"] != wantNode {
		t.Errorf("bootstrap node id %v, want %s", node["id"], wantNode)
	}
	resolver, err := xdsgrpc.NewXDSResolverWithConfigForTesting(bootstrap)
	if err != nil {
		t.Fatalf("the agent's bootstrap: %v\n%s", err, bootstrap)
	}
	target := fmt.Sprintf("xds:///echo.%s.svc.cluster.local:7070", app)
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(resolver))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Cleanup(dump)
	client := testpb.NewTestServiceClient(conn)
	testproc.Eventually(t, time.Minute, "an RPC to "+target+" through the agent", func() (bool, string) {
		if ok, detail := agent.alive(); !ok {
			t.Fatal(detail)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := client.UnaryCall(ctx, &testpb.SimpleRequest{}, grpc.WaitForReady(true))
		if err != nil {
			return false, err.Error()
		}
		return resp.Hostname == "echo-v1", resp.Hostname
	})
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := client.UnaryCall(ctx, &testpb.SimpleRequest{})
		cancel()
		if err != nil || resp.Hostname != "echo-v1" {
			t.Fatalf("RPC %d: %v %v", i, resp, err)
		}
	}
	if log := agent.log.String(); !strings.Contains(log, "connected to upstream XDS server: "+secure) {
		t.Errorf("the agent's log does not show its upstream stream to %s:\n%s", secure, log)
	}

	// (3) istioctl proxy-status over the TLS port, as a caller of istiod's
	// namespace (-i): istioctl needs its ServiceAccount default first
	psCmd := func(ns string, extra ...string) *exec.Cmd {
		return istiobin.ProxyStatusCommand(t, env.Kubeconfig, secure, append([]string{"-i", ns}, extra...)...)
	}
	out, err := runIstioctl(t, psCmd(istiodNS))
	wantErr := fmt.Sprintf(`failed to create RPC credentials for "default.%s": serviceaccounts "default" not found`, istiodNS)
	if err == nil || !strings.Contains(out, wantErr) {
		t.Errorf("istioctl without ServiceAccount default: %v\n%s\nwant the error %s", err, out, wantErr)
	}
	istiobin.ServiceAccountToken(t, env.Kube, istiodNS, "default", "istio-ca")
	wantRow := pod + "." + app + " Kubernetes " + istiodPod + " unknown 4 (CDS,LDS,EDS,RDS)"
	var lastTable string
	testproc.Eventually(t, time.Minute, "istioctl proxy-status lists the proxy with its 4 types", func() (bool, string) {
		out, err := runIstioctl(t, psCmd(istiodNS))
		if err != nil {
			return false, fmt.Sprintf("%v\n%s", err, out)
		}
		lastTable = out
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) != 2 {
			return false, "want the header and one proxy:\n" + out
		}
		header := strings.TrimSpace(spaces.ReplaceAllString(lines[0], " "))
		row := strings.TrimSpace(spaces.ReplaceAllString(lines[1], " "))
		return header == "NAME CLUSTER ISTIOD VERSION SUBSCRIBED TYPES" && row == wantRow,
			fmt.Sprintf("want the row %q:\n%s", wantRow, out)
	})
	t.Logf("istioctl proxy-status -i %s:\n%s", istiodNS, lastTable)

	// the JSON form: the proxy ID, the metadata istioctl reads, every type SYNCED
	out, err = runIstioctl(t, psCmd(istiodNS, "-o", "json"))
	if err != nil {
		t.Fatalf("istioctl proxy-status -o json: %v\n%s", err, out)
	}
	var doc struct {
		TypeURL      string `json:"typeUrl"`
		ControlPlane struct {
			Identifier string `json:"identifier"`
		} `json:"controlPlane"`
		Resources []struct {
			Node struct {
				ID       string            `json:"id"`
				Metadata map[string]string `json:"metadata"`
			} `json:"node"`
			Configs []struct {
				TypeURL      string `json:"typeUrl"`
				ConfigStatus string `json:"configStatus"`
				LastUpdated  string `json:"lastUpdated"`
			} `json:"genericXdsConfigs"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("istioctl proxy-status -o json: %v\n%s", err, out)
	}
	if doc.TypeURL != "istio.io/debug/syncz" || len(doc.Resources) != 1 {
		t.Fatalf("istioctl proxy-status -o json: type %q, %d proxies, want 1:\n%s", doc.TypeURL, len(doc.Resources), out)
	}
	var cp struct{ Component, ID string }
	if err := json.Unmarshal([]byte(doc.ControlPlane.Identifier), &cp); err != nil || cp.Component != "istiod" || cp.ID != istiodPod {
		t.Errorf("control plane identifier %s (%v), want component istiod with ID %s", doc.ControlPlane.Identifier, err, istiodPod)
	}
	r := doc.Resources[0]
	wantMeta := map[string]string{"CLUSTER_ID": "Kubernetes", "ISTIO_VERSION": "unknown", "NAMESPACE": app}
	if r.Node.ID != pod+"."+app || fmt.Sprint(r.Node.Metadata) != fmt.Sprint(wantMeta) {
		t.Errorf("proxy %q with metadata %v, want %s.%s with %v", r.Node.ID, r.Node.Metadata, pod, app, wantMeta)
	}
	for _, c := range r.Configs {
		if c.ConfigStatus != "SYNCED" || c.LastUpdated == "" {
			t.Errorf("%s: status %s, last updated %q; want SYNCED with a time", c.TypeURL, c.ConfigStatus, c.LastUpdated)
		}
	}

	// a caller of the proxy's namespace sees it too, a caller of another
	// namespace does not
	istiobin.ServiceAccountToken(t, env.Kube, app, "default", "istio-ca")
	istiobin.ServiceAccountToken(t, env.Kube, other, "default", "istio-ca")
	if out, err := runIstioctl(t, psCmd(app)); err != nil || !strings.Contains(spaces.ReplaceAllString(out, " "), wantRow) {
		t.Errorf("istioctl proxy-status -i %s (the proxy's namespace): %v\n%s", app, err, out)
	}
	if out, err := runIstioctl(t, psCmd(other)); err != nil || strings.Contains(out, pod) {
		t.Errorf("istioctl proxy-status -i %s (another namespace) must list no proxy: %v\n%s", other, err, out)
	}
}
