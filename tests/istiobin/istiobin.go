package istiobin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshplane/istiod/tests/refdata"
)

// Version is the istio.io/istio module version hack/istiobin.sh builds: a
// commit of the release-1.31 branch (VERSION file 1.31, istio.io/api
// v1.31.0-rc.0...). It duplicates the default of ISTIO_VERSION in
// hack/istiobin.sh, where the choice is explained; TestVersionMatchesScript
// fails when the two differ.
const Version = "v0.0.0-20260827124520-eed52ebb66ad"

// VersionEnv, when set, overrides Version here and in hack/istiobin.sh.
const VersionEnv = "ISTIOBIN_VERSION"

func version() string {
	if v := os.Getenv(VersionEnv); v != "" {
		return v
	}
	return Version
}

// Dir returns the directory hack/istiobin.sh builds into:
// ${XDG_CACHE_HOME:-$HOME/.cache}/istiod-testbin/istio-<version>.
func Dir() (string, error) { return CacheDir("istio-" + version()) }

// CacheDir is the directory of one built tool in the machine's test binary
// cache, ${XDG_CACHE_HOME:-$HOME/.cache}/istiod-testbin/<name>, where the
// hack/*bin.sh scripts build once per machine.
func CacheDir(name string) (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home := os.Getenv("HOME")
		if home == "" {
			return "", errors.New("neither XDG_CACHE_HOME nor HOME is set")
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "istiod-testbin", name), nil
}

// PilotAgent returns the path of Istio's pilot-agent, failing the test when
// `make testbin` has not built it.
func PilotAgent(t testing.TB) string {
	t.Helper()
	return binary(t, "pilot-agent")
}

// Istioctl returns the path of Istio's istioctl, failing the test when
// `make testbin` has not built it.
func Istioctl(t testing.TB) string {
	t.Helper()
	return binary(t, "istioctl")
}

// PilotDiscovery returns the path of Istio's own pilot-discovery, the
// benchmark peer of tests/loadtest, or an error naming `make peerbin` when it
// is not built. It is not part of `make testbin` (no test needs it), and it
// takes no testing.TB because the load test is a command.
func PilotDiscovery() (string, error) {
	p, err := find("pilot-discovery")
	if err != nil {
		return "", fmt.Errorf("Istio's pilot-discovery (istio.io/istio@%s) is not built: %v; run `make peerbin` "+
			"(hack/istiobin.sh --peer builds it once per machine, several minutes)", version(), err)
	}
	return p, nil
}

func binary(t testing.TB, name string) string {
	t.Helper()
	p, err := find(name)
	if err != nil {
		if os.Getenv(refdata.SkipEnv) == "1" {
			t.Skipf("Istio's %s is not built (%s=1): %v", name, refdata.SkipEnv, err)
		}
		t.Fatalf("Istio's %s (istio.io/istio@%s) is not built: %v; run `make testbin` "+
			"(hack/istiobin.sh builds it once per machine, several minutes), or set %s=1 to skip", name, version(), err, refdata.SkipEnv)
	}
	return p
}

func find(name string) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", p)
	}
	return p, nil
}

// AgentOptions describes the pod a proxyless pilot-agent pretends to run in.
// DiscoveryAddress, PodName, Namespace and ServiceAccount are required; the
// other fields have the defaults given, which are those of the recorded run
// in ../shared/reference/security/real/agent.
type AgentOptions struct {
	// DiscoveryAddress is istiod's TLS xDS+CA address (--secureGRPCAddr),
	// such as "127.0.0.1:15012".
	DiscoveryAddress string
	PodName          string
	Namespace        string
	ServiceAccount   string

	// Token is the service account token, audience istio-ca, that
	// PrepareAgentDir writes (see ServiceAccountToken).
	Token []byte
	// RootCert is the root PEM istiod publishes in ConfigMap
	// istio-ca-root-cert (key root-cert.pem).
	RootCert []byte

	// Labels and Annotations are the pod's, written as downward API files.
	// PrepareAgentDir adds status.sidecar.istio.io/port="0" and
	// traffic.sidecar.istio.io/excludeInterfaces (every non-loopback
	// interface) unless Annotations sets them.
	Labels      map[string]string
	Annotations map[string]string

	InstanceIP    string // pod IP, first of INSTANCE_IPS; default 10.244.0.10
	HostIP        string // default 10.0.0.1
	NodeName      string // ISTIO_META_NODE_NAME; default node-0
	AppContainers string // ISTIO_META_APP_CONTAINERS, comma-separated; may be empty
	// WorkloadName is the Deployment's name; ISTIO_META_WORKLOAD_NAME and
	// ISTIO_META_OWNER are set only when it is.
	WorkloadName string
	Owner        string // default kubernetes://apis/apps/v1/namespaces/<ns>/deployments/<WorkloadName>
	ClusterID    string // ISTIO_META_CLUSTER_ID; default Kubernetes
	TrustDomain  string // TRUST_DOMAIN and ISTIO_META_MESH_ID; default cluster.local
	IstiodSAN    string // name istiod's certificate is verified for; default istiod.istio-system.svc
	// CAAddr sets CA_ADDR. Leave it empty: with CA_ADDR set, ISTIOD_SAN does
	// not apply to the CA connection and the handshake to an IP fails.
	CAAddr string

	// Env is appended to AgentEnv's list ("KEY=value"); a later entry wins.
	Env []string
}

func (o AgentOptions) withDefaults() AgentOptions {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&o.InstanceIP, "10.244.0.10")
	def(&o.HostIP, "10.0.0.1")
	def(&o.NodeName, "node-0")
	def(&o.ClusterID, "Kubernetes")
	def(&o.TrustDomain, "cluster.local")
	def(&o.IstiodSAN, "istiod.istio-system.svc")
	if o.WorkloadName != "" {
		def(&o.Owner, "kubernetes://apis/apps/v1/namespaces/"+o.Namespace+"/deployments/"+o.WorkloadName)
	}
	return o
}

func (o AgentOptions) validate() error {
	var missing []string
	for name, v := range map[string]string{
		"DiscoveryAddress": o.DiscoveryAddress, "PodName": o.PodName,
		"Namespace": o.Namespace, "ServiceAccount": o.ServiceAccount,
	} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(o.Token) == 0 {
		missing = append(missing, "Token")
	}
	if len(o.RootCert) == 0 {
		missing = append(missing, "RootCert")
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("AgentOptions without %s", strings.Join(missing, ", "))
	}
	if _, _, err := net.SplitHostPort(o.DiscoveryAddress); err != nil {
		return fmt.Errorf("AgentOptions.DiscoveryAddress %q: %v", o.DiscoveryAddress, err)
	}
	return nil
}

// AgentEnv returns the agent's whole environment, in the order Istio's
// grpc-agent injection template sets it, minus CA_ADDR (unless CAAddr is
// set) and ISTIO_META_POD_PORTS, plus ISTIOD_SAN and CLOUD_PLATFORM=none: the
// environment of the recorded run. HOME and PATH are not included
// (AgentCommand adds them).
func AgentEnv(opts AgentOptions) []string {
	o := opts.withDefaults()
	env := []string{
		"ISTIO_META_GENERATOR=grpc",
		"OUTPUT_CERTS=./var/lib/istio/data",
		"PILOT_CERT_PROVIDER=istiod",
	}
	if o.CAAddr != "" {
		env = append(env, "CA_ADDR="+o.CAAddr)
	}
	env = append(env,
		"POD_NAME="+o.PodName,
		"POD_NAMESPACE="+o.Namespace,
		"INSTANCE_IP="+o.InstanceIP,
		"SERVICE_ACCOUNT="+o.ServiceAccount,
		"HOST_IP="+o.HostIP,
		`PROXY_CONFIG={"discoveryAddress":`+strconv.Quote(o.DiscoveryAddress)+`}`,
		"ISTIOD_SAN="+o.IstiodSAN,
		"ISTIO_META_APP_CONTAINERS="+o.AppContainers,
		"ISTIO_META_CLUSTER_ID="+o.ClusterID,
		"ISTIO_META_NODE_NAME="+o.NodeName,
	)
	if o.WorkloadName != "" {
		env = append(env, "ISTIO_META_WORKLOAD_NAME="+o.WorkloadName, "ISTIO_META_OWNER="+o.Owner)
	}
	env = append(env,
		"ISTIO_META_MESH_ID="+o.TrustDomain,
		"TRUST_DOMAIN="+o.TrustDomain,
		"ISTIO_META_DNS_CAPTURE=false",
		"DISABLE_ENVOY=true",
		"CLOUD_PLATFORM=none",
	)
	return append(env, o.Env...)
}

// AgentArgs returns the agent's arguments as the grpc-agent template gives
// them with the default values (logLevel warning, componentLogLevel
// misc:error, logging.level default:info, no STS port).
func AgentArgs(opts AgentOptions) []string {
	return []string{
		"proxy", "sidecar",
		"--domain", opts.Namespace + ".svc." + "cluster.local",
		"--proxyLogLevel=warning",
		"--proxyComponentLogLevel=misc:error",
		"--log_output_level=default:info",
	}
}

// Paths, relative to the agent's working directory, of what it reads and
// writes.
const (
	TokenPath         = "var/run/secrets/tokens/istio-token"
	RootCertPath      = "var/run/secrets/istio/root-cert.pem"
	AnnotationsPath   = "etc/istio/pod/annotations"
	LabelsPath        = "etc/istio/pod/labels"
	OutputCertsDir    = "var/lib/istio/data" // cert-chain.pem, key.pem, root-cert.pem (0600)
	GRPCBootstrapPath = "etc/istio/proxy/grpc-bootstrap.json"
	XDSSocketPath     = "etc/istio/proxy/XDS"
)

// PrepareAgentDir makes a working directory for the agent, removed when the
// test ends, and writes its input files there (see the package comment). It
// lives directly under os.TempDir() so that XDSSocket stays within the 108
// bytes a unix socket address may have. Failures end the test.
func PrepareAgentDir(t testing.TB, opts AgentOptions) string {
	t.Helper()
	if err := opts.validate(); err != nil {
		t.Fatalf("istiobin: %v", err)
	}
	dir, err := os.MkdirTemp("", "istio-agent-")
	if err != nil {
		t.Fatalf("istiobin: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })

	annotations := map[string]string{"status.sidecar.istio.io/port": "0"}
	if ifaces, err := hostInterfaces(); err != nil {
		t.Fatalf("istiobin: listing interfaces: %v", err)
	} else if len(ifaces) > 0 {
		annotations["traffic.sidecar.istio.io/excludeInterfaces"] = strings.Join(ifaces, ",")
	}
	for k, v := range opts.Annotations {
		annotations[k] = v
	}
	files := []struct {
		path string
		data []byte
	}{
		{TokenPath, opts.Token},
		{RootCertPath, opts.RootCert},
		{AnnotationsPath, []byte(DownwardAPI(annotations))},
		{LabelsPath, []byte(DownwardAPI(opts.Labels))},
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatalf("istiobin: %v", err)
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			t.Fatalf("istiobin: %v", err)
		}
	}
	for _, d := range []string{OutputCertsDir, filepath.Dir(XDSSocketPath)} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(d)), 0o755); err != nil {
			t.Fatalf("istiobin: %v", err)
		}
	}
	if s := XDSSocket(dir); len(s) >= 108 {
		t.Fatalf("istiobin: socket path %s is %d bytes, too long for a unix socket; set a shorter TMPDIR", s, len(s))
	}
	return dir
}

// DownwardAPI formats a map as Kubernetes' downward API writes labels and
// annotations, which the agent parses: key="quoted value" lines, sorted.
func DownwardAPI(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + strconv.Quote(m[k]) + "\n")
	}
	return b.String()
}

// hostInterfaces returns the names of the host's interfaces other than
// loopback ones: excluded, their addresses stay out of INSTANCE_IPS.
func hostInterfaces() ([]string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, i := range ifaces {
		if i.Flags&net.FlagLoopback == 0 {
			names = append(names, i.Name)
		}
	}
	return names, nil
}

// XDSSocket returns the absolute path of the agent's xDS socket in dir, the
// address a proxyless client dials ("unix://" + XDSSocket(dir)) instead of
// the bootstrap's unix:///etc/istio/proxy/XDS.
func XDSSocket(dir string) string {
	return filepath.Join(dir, filepath.FromSlash(XDSSocketPath))
}

// AgentCommand prepares a working directory (PrepareAgentDir) and returns
// the unstarted command that runs Istio's pilot-agent in it, with AgentEnv
// plus HOME (the directory) and PATH as its only environment, and that
// directory. The caller starts it, collects its output and stops it (the
// agent exits on SIGTERM).
func AgentCommand(t testing.TB, opts AgentOptions) (*exec.Cmd, string) {
	t.Helper()
	bin := PilotAgent(t)
	dir := PrepareAgentDir(t, opts)
	cmd := exec.Command(bin, AgentArgs(opts)...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, AgentEnv(opts)...)
	return cmd, dir
}

// ProxyStatusCommand returns the unstarted `istioctl proxy-status
// --xds-address <xdsAddress> -i istio-system --kubeconfig <kubeconfig>`
// command, extra arguments appended (such as "-o", "json"). istioctl asks
// the API server for a token of istio-system/default, audience istio-ca,
// which needs that service account to exist (ServiceAccountToken creates
// it), and connects with TLS without verifying istiod's certificate. Its
// environment holds only PATH and HOME, a fresh directory, so that no
// ~/.istioctl/config.yaml, ~/.kube/config, KUBECONFIG or ISTIOCTL_* setting
// of the machine applies.
func ProxyStatusCommand(t testing.TB, kubeconfig, xdsAddress string, extra ...string) *exec.Cmd {
	t.Helper()
	args := append([]string{"proxy-status", "--xds-address", xdsAddress, "-i", "istio-system", "--kubeconfig", kubeconfig}, extra...)
	cmd := exec.Command(Istioctl(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	return cmd
}

// ServiceAccountToken returns a token of namespace/name for audience (istio-ca
// for the agent and istiod), valid for an hour, from the TokenRequest API.
// It creates the namespace and the service account first when they do not
// exist, as no controller creates them in tests/kube. Failures end the test.
func ServiceAccountToken(t testing.TB, kube kubernetes.Interface, namespace, name, audience string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("istiobin: creating namespace %s: %v", namespace, err)
	}
	_, err = kube.CoreV1().ServiceAccounts(namespace).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("istiobin: creating service account %s/%s: %v", namespace, name, err)
	}
	ttl := int64(3600)
	tr, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: &ttl},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("istiobin: token for %s/%s, audience %s: %v", namespace, name, audience, err)
	}
	return []byte(tr.Status.Token)
}
