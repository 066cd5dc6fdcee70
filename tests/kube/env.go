package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
)

// startTimeout bounds each of etcd's and kube-apiserver's start; generous
// because CI machines are small and busy.
const startTimeout = 2 * time.Minute

// Env is a running etcd + kube-apiserver with the CRDs installed and clients
// authenticated as a cluster admin. Its fields are read-only.
type Env struct {
	// RESTConfig reaches the API server as an admin. Copy it (rest.CopyConfig)
	// before changing it.
	RESTConfig *rest.Config
	// Kubeconfig is the path of a kubeconfig file with the same credentials,
	// for processes such as the istiod binary (--kubeconfig).
	Kubeconfig string

	Kube       kubernetes.Interface
	Istio      istioclient.Interface
	GatewayAPI gatewayclient.Interface
	Extensions apiextensionsclient.Interface
	Dynamic    dynamic.Interface

	env  *envtest.Environment
	logs *tailBuffer
	stop sync.Once

	// shared is set on the Shared server, which no test may restart.
	shared bool
	// auditLog is the API server's audit log (WithAuditLog), else "".
	auditLog string
	// apiMu serialises StopAPIServer and StartAPIServer.
	apiMu      sync.Mutex
	apiStopped bool
}

// Option configures Start.
type Option func(*options)

type options struct {
	skip  map[string]bool
	only  []string
	audit bool
}

// WithoutCRDs leaves the named CRDs (plural.group, e.g.
// "virtualservices.networking.istio.io") uninstalled; Env.InstallCRDs adds
// them later.
func WithoutCRDs(names ...string) Option {
	return func(o *options) {
		for _, n := range names {
			o.skip[n] = true
		}
	}
}

// WithCRDs installs only the named CRDs instead of all of manifests/crds/.
// Combined with WithoutCRDs, skipped names win.
func WithCRDs(names ...string) Option {
	return func(o *options) { o.only = append(o.only, names...) }
}

// Start starts a dedicated etcd and kube-apiserver for t, installs the CRDs
// (see WithoutCRDs, WithCRDs) and stops everything in t.Cleanup. The
// kubeconfig file goes into t.TempDir(). Failures end the test with t.Fatal.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	o := options{skip: map[string]bool{}}
	for _, opt := range opts {
		opt(&o)
	}
	names, err := crdSelection(o)
	if err != nil {
		t.Fatalf("kube: %v", err)
	}
	begin := time.Now()
	e, err := start(t.TempDir(), names, o)
	if e != nil {
		t.Cleanup(e.Stop)
	}
	if err != nil {
		t.Fatalf("kube: %v", err)
	}
	t.Logf("kube: API server %s with %d CRDs ready in %v", e.RESTConfig.Host, len(names), time.Since(begin).Round(time.Millisecond))
	return e
}

func crdSelection(o options) ([]string, error) {
	all, err := allCRDs()
	if err != nil {
		return nil, fmt.Errorf("reading CRDs: %w", err)
	}
	names := o.only
	if len(names) == 0 {
		names = sortedKeys(all)
	}
	for n := range o.skip {
		if _, ok := all[n]; !ok {
			return nil, fmt.Errorf("WithoutCRDs(%q): no such CRD in manifests/crds/", n)
		}
	}
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return o.skip[n] }), nil
}

var logOnce sync.Once

// start brings up the control plane, writes dir/kubeconfig and installs the
// CRDs. On error it returns the partial Env (when processes started) so the
// caller can stop it.
func start(dir string, crds []string, o options) (*Env, error) {
	// envtest logs through controller-runtime's global logger, which warns
	// loudly when never set. The harness reports errors itself.
	logOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) })

	bin, err := binaries()
	if err != nil {
		return nil, err
	}
	logs := newTailBuffer(64 << 10)
	// The API server's certificates live in a directory of ours rather
	// than one envtest removes on stop, so that StartAPIServer brings it
	// back with the same serving certificate and client CA: clients keep
	// their rest.Config across a restart.
	certDir := filepath.Join(dir, "apiserver")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	api := &envtest.APIServer{Path: filepath.Join(bin, "kube-apiserver"), Out: logs, Err: logs, CertDir: certDir}
	// On SIGTERM the server ends its watches within this grace and exits;
	// without it, open watches hold the shutdown for a minute (until the
	// HTTP server gives up on them), longer than envtest waits.
	api.Configure().Set("shutdown-watch-termination-grace-period", "5s")
	auditLog := ""
	if o.audit {
		if auditLog, err = configureAudit(api, dir); err != nil {
			return nil, err
		}
	}
	useExisting := false
	te := &envtest.Environment{
		// Never an existing cluster, whatever USE_EXISTING_CLUSTER says.
		UseExistingCluster: &useExisting,
		// Never download: the binaries come from hack/testbin.sh. Explicit
		// paths also win over KUBEBUILDER_ASSETS / TEST_ASSET_* variables.
		DownloadBinaryAssets:  false,
		BinaryAssetsDirectory: bin,
		ControlPlane: envtest.ControlPlane{
			Etcd:      &envtest.Etcd{Path: filepath.Join(bin, "etcd"), Out: logs, Err: logs},
			APIServer: api,
		},
		ControlPlaneStartTimeout: startTimeout,
		ControlPlaneStopTimeout:  time.Minute,
	}
	cfg, err := te.Start()
	if err != nil {
		_ = te.Stop()
		return nil, fmt.Errorf("starting etcd and kube-apiserver from %s: %v\nlast control-plane output:\n%s", bin, err, logs.String())
	}
	e := &Env{RESTConfig: cfg, env: te, logs: logs, auditLog: auditLog}
	if err := e.init(dir); err != nil {
		return e, err
	}
	if len(crds) > 0 {
		if err := e.installCRDs(context.Background(), crds); err != nil {
			return e, err
		}
	}
	return e, nil
}

func (e *Env) init(dir string) error {
	e.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, e.env.KubeConfig, 0o600); err != nil {
		return err
	}
	var err error
	if e.Kube, err = kubernetes.NewForConfig(e.RESTConfig); err != nil {
		return err
	}
	if e.Istio, err = istioclient.NewForConfig(e.RESTConfig); err != nil {
		return err
	}
	if e.GatewayAPI, err = gatewayclient.NewForConfig(e.RESTConfig); err != nil {
		return err
	}
	if e.Extensions, err = apiextensionsclient.NewForConfig(e.RESTConfig); err != nil {
		return err
	}
	e.Dynamic, err = dynamic.NewForConfig(e.RESTConfig)
	return err
}

// Stop stops kube-apiserver and etcd and removes their data. It is
// idempotent; Start and Main call it for you.
func (e *Env) Stop() {
	e.stop.Do(func() {
		if err := e.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "kube: stopping the control plane: %v\n", err)
		}
	})
}

// ControlPlaneOutput returns the last 64 KiB that etcd and kube-apiserver
// wrote, for failure messages.
func (e *Env) ControlPlaneOutput() string { return e.logs.String() }

// CreateNamespace creates a namespace with the given labels and fails the
// test if that is not possible (for example when it exists). Namespaces are
// not deleted afterwards: no namespace controller runs to finish a deletion.
func (e *Env) CreateNamespace(t testing.TB, name string, labels map[string]string) *corev1.Namespace {
	t.Helper()
	return e.createNamespace(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
}

// NewNamespace creates a namespace with a fresh name ("test-" plus a random
// suffix) for a test on a shared server.
func (e *Env) NewNamespace(t testing.TB, labels map[string]string) *corev1.Namespace {
	t.Helper()
	return e.createNamespace(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-", Labels: labels}})
}

func (e *Env) createNamespace(t testing.TB, ns *corev1.Namespace) *corev1.Namespace {
	t.Helper()
	got, err := e.Kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kube: creating namespace %s%s: %v", ns.Name, ns.GenerateName, err)
	}
	return got
}

// tailBuffer keeps the last max bytes written to it; safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
