package differential

import (
	"github.com/meshplane/istiod/tests/testproc"

	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/tests/istiobin"
	"github.com/meshplane/istiod/tests/kube"
	"github.com/meshplane/istiod/tests/refdata"
)

// SkipEnv, set to 1, skips the differential tests (and only then: a
// missing pilot-discovery is otherwise a failure). It is the variable
// that skips every test needing reference material.
const SkipEnv = refdata.SkipEnv

// DumpEnv names a directory where each case's normalised snapshots are
// written (<dir>/<case>/<flavor>/<type>.json), for reading a difference
// whole.
const DumpEnv = "DIFFERENTIAL_DUMP"

// MeshConfig is the mesh config file both control planes read: Istio's
// defaults, with the access log on as Istio's default profile has it.
const MeshConfig = `trustDomain: cluster.local
accessLogFile: /dev/stdout
`

// startTimeout bounds the start of the fixture's parts; generous, as CI
// machines are small and the two API servers and control planes start
// together.
const startTimeout = 3 * time.Minute

// Fixture is the pair of worlds the cases run in: two API servers (etcd
// and kube-apiserver of tests/kube, every CRD of manifests/crds
// installed), ours reading one and Istio's pilot-discovery the other.
// Cases apply the same objects to both. Its fields are read-only.
type Fixture struct {
	planes [2]*plane // Ours, Istio
	dir    string
	// bins are the binaries of both planes (Ours, Istio); cfg is the mesh
	// config and environment they run with (see configure), restarts
	// counts the restarts
	bins     [2]string
	cfg      planeConfig
	restarts int
	// remotes are the remote clusters' API servers (Ours, Istio), started
	// on the first multicluster case (see startRemotes)
	remotes        [2]*kube.Env
	remotesStarted bool
	remotesErr     error
	// mu serialises the cases: they share the two worlds
	mu sync.Mutex
}

var shared struct {
	mu      sync.Mutex
	inMain  bool
	started bool
	f       *Fixture
	err     error
}

// Main runs the package's tests, then stops the shared fixture, if a test
// started it, and exits. Call it from TestMain:
//
//	func TestMain(m *testing.M) { differential.Main(m) }
func Main(m *testing.M) {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	if shared.f != nil {
		shared.f.stop()
	}
	shared.mu.Unlock()
	os.Exit(code)
}

// Shared returns the fixture of this test binary, starting it on first
// use (a minute or so: building cmd/istiod, two API servers, two control
// planes). It skips the test when ISTIOD_SKIP_REFERENCE=1 and fails it
// when Istio's pilot-discovery is not built (`make peerbin`) or the start
// failed (every later caller gets the same error).
func Shared(t testing.TB) *Fixture {
	t.Helper()
	if os.Getenv(SkipEnv) == "1" {
		t.Skipf("differential tests against Istio's pilot-discovery skipped (%s=1)", SkipEnv)
	}
	peer, err := istiobin.PilotDiscovery()
	if err != nil {
		t.Fatalf("differential: %v (or set %s=1 to skip)", err, SkipEnv)
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.inMain {
		t.Fatal("differential.Shared needs the package's TestMain to call differential.Main")
	}
	if !shared.started {
		shared.started = true
		begin := time.Now()
		shared.f, shared.err = start(peer)
		if shared.err == nil {
			t.Logf("differential: both control planes ready in %v", time.Since(begin).Round(time.Millisecond))
		}
	}
	if shared.err != nil {
		t.Fatalf("differential: %v", shared.err)
	}
	return shared.f
}

// start builds ours, starts both API servers (in parallel), prepares
// istio-system in each and starts both control planes.
func start(peer string) (f *Fixture, err error) {
	dir, err := os.MkdirTemp("", "istiod-differential-")
	if err != nil {
		return nil, err
	}
	f = &Fixture{dir: dir}
	defer func() {
		if err != nil {
			f.stop()
		}
	}()
	type started struct {
		env *kube.Env
		err error
	}
	kubes := [2]chan started{make(chan started, 1), make(chan started, 1)}
	for i, fl := range []Flavor{Ours, Istio} {
		go func() {
			env, err := kube.StartServer(filepath.Join(dir, string(fl), "kube"))
			if err == nil {
				err = prepareCluster(env)
			}
			kubes[i] <- started{env, err}
		}()
	}
	ours, buildErr := testproc.BuildIstiod(dir)
	envs := [2]*kube.Env{}
	var kubeErr error
	for i := range kubes {
		s := <-kubes[i]
		envs[i] = s.env
		if s.err != nil && kubeErr == nil {
			kubeErr = s.err
		}
	}
	// planes owns the API servers from here on (stop stops them)
	for i, fl := range []Flavor{Ours, Istio} {
		f.planes[i] = &plane{flavor: fl, kube: envs[i]}
	}
	if buildErr != nil {
		return f, buildErr
	}
	if kubeErr != nil {
		return f, fmt.Errorf("starting the API servers: %v", kubeErr)
	}
	f.bins = [2]string{ours, peer}
	return f, f.startPlanes(planeConfig{})
}

// planeConfig is what a Case may change of both control planes: mesh
// config YAML over MeshConfig, and environment lines (NAME=value, one a
// line) beside commonEnv.
type planeConfig struct {
	mesh, env string
}

// startPlanes starts both control planes with cfg on the API servers
// of f.planes and waits until both are ready.
func (f *Fixture) startPlanes(cfg planeConfig) error {
	text, err := meshText(cfg.mesh)
	if err != nil {
		return err
	}
	meshFile := filepath.Join(f.dir, "mesh.yaml")
	if f.restarts > 0 {
		meshFile = filepath.Join(f.dir, fmt.Sprintf("mesh-%d.yaml", f.restarts))
	}
	if err := os.WriteFile(meshFile, []byte(text), 0o644); err != nil {
		return err
	}
	var env []string
	if cfg.env != "" {
		env = strings.Split(cfg.env, "\n")
	}
	for i, fl := range []Flavor{Ours, Istio} {
		p, err := startPlane(fl, f.bins[i], f.planes[i].kube, meshFile, filepath.Join(f.dir, string(fl)), env...)
		if err != nil {
			return fmt.Errorf("starting %s: %v", fl, err)
		}
		p.remote = f.remotes[i]
		f.planes[i] = p
	}
	f.cfg = cfg
	for _, p := range f.planes {
		if err := p.waitReady(startTimeout); err != nil {
			return err
		}
	}
	return nil
}

// meshText is MeshConfig with the top-level fields of overlay (YAML)
// set over it.
func meshText(overlay string) (string, error) {
	if strings.TrimSpace(overlay) == "" {
		return MeshConfig, nil
	}
	var base, over map[string]any
	if err := yaml.Unmarshal([]byte(MeshConfig), &base); err != nil {
		return "", err
	}
	if err := yaml.Unmarshal([]byte(overlay), &over); err != nil {
		return "", fmt.Errorf("mesh config of the case: %v", err)
	}
	for k, v := range over {
		base[k] = v
	}
	b, err := yaml.Marshal(base)
	return string(b), err
}

// configure restarts both control planes with cfg, on the same API
// servers, unless they already run with it. The caller holds f.mu.
func (f *Fixture) configure(cfg planeConfig) error {
	if cfg == f.cfg {
		return nil
	}
	for _, p := range f.planes {
		p.stop()
	}
	f.restarts++
	begin := time.Now()
	if err := f.startPlanes(cfg); err != nil {
		return err
	}
	log.Printf("differential: control planes restarted (mesh %q, env %q) in %v", cfg.mesh, cfg.env, time.Since(begin).Round(time.Millisecond))
	return nil
}

// prepareCluster makes what an Istio install leaves in a cluster before
// istiod starts: namespace istio-system and the sidecar injector's
// ConfigMap (its templates render the Deployments of Gateway API
// gateways in both control planes). The ConfigMap is the one of Istio's
// Helm chart with default values (../shared/reference/gateways).
func prepareCluster(env *kube.Env) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: istiodNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	b, err := os.ReadFile(injectorConfigMap())
	if err != nil {
		return fmt.Errorf("the injector ConfigMap of the reference: %v", err)
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(b, &cm); err != nil {
		return err
	}
	cm.Namespace = istiodNamespace
	_, err = env.Kube.CoreV1().ConfigMaps(istiodNamespace).Create(ctx, &cm, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// injectorConfigMap is the path of the reference's injector ConfigMap.
func injectorConfigMap() string {
	root, err := kube.RepoRoot()
	if err != nil {
		return ""
	}
	return filepath.Join(filepath.Dir(root), "shared", "reference", "gateways", "input", "istio-sidecar-injector.yaml")
}

// stop ends both control planes, then both API servers (and the remote
// ones, when started), and removes the work directory.
func (f *Fixture) stop() {
	for _, p := range f.planes {
		if p != nil {
			p.stop()
		}
	}
	for _, p := range f.planes {
		if p != nil && p.kube != nil {
			p.kube.Stop()
		}
	}
	for _, r := range f.remotes {
		if r != nil {
			r.Stop()
		}
	}
	os.RemoveAll(f.dir)
}

func (f *Fixture) plane(fl Flavor) *plane {
	if fl == Ours {
		return f.planes[0]
	}
	return f.planes[1]
}
