package differential

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/meshplane/istiod/tests/kube"
	"github.com/meshplane/istiod/tests/testproc"
)

// Flavor names one of the two control planes.
type Flavor string

const (
	// Ours is this repository's istiod (cmd/istiod).
	Ours Flavor = "ours"
	// Istio is Istio's own pilot-discovery.
	Istio Flavor = "istio"
)

// istiodNamespace is the namespace both control planes run in: their CA
// Secrets, Leases and the injector ConfigMap live there.
const istiodNamespace = "istio-system"

// plane is one control plane process with the API server it reads.
type plane struct {
	flavor Flavor
	kube   *kube.Env
	// remote is the remote cluster's API server, once a multicluster
	// case started it (its own endpoint is normalised as kube's)
	remote *kube.Env
	// dynamic is the harness's client of the API server, without the
	// deprecation warnings a namespace sweep provokes
	dynamic dynamic.Interface
	dir     string

	http, grpc string
	// monitoring serves /metrics
	monitoring string

	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	exitErr error
}

// commonEnv is what both control planes get besides PATH and HOME: the
// pod identity istiod takes from the downward API, a quick debounce (the
// cases are small and the harness polls; the pushed content does not
// depend on it), and no new-stream rate limit, as the harness opens a
// stream per poll.
var commonEnv = []string{
	"POD_NAMESPACE=" + istiodNamespace,
	"POD_NAME=istiod-differential",
	"PILOT_DEBOUNCE_AFTER=20ms",
	"PILOT_DEBOUNCE_MAX=1s",
	"PILOT_MAX_REQUESTS_PER_SECOND=100000",
}

// startPlane runs bin (of flavor fl) on env's API server with the mesh
// config file, on free loopback ports, in dir; its output goes to
// dir/istiod.log. Both command lines follow tests/loadtest: the flags
// Istio's Deployment passes, with addresses on loopback. The environment
// is the commonEnv and extraEnv only (plus PATH and HOME=dir), so that
// no PILOT_* setting of the machine reaches either.
func startPlane(fl Flavor, bin string, env *kube.Env, meshFile, dir string, extraEnv ...string) (*plane, error) {
	// distinct ports: picked one by one, two could be the same
	addrs, err := testproc.FreeAddrs(5)
	if err != nil {
		return nil, err
	}
	httpAddr, monitoring, grpcAddr, secure, https := addrs[0], addrs[1], addrs[2], addrs[3], addrs[4]
	args := []string{"discovery", "--meshConfig", meshFile, "--kubeconfig", env.Kubeconfig, "--namespace", istiodNamespace,
		"--httpAddr", httpAddr, "--monitoringAddr", monitoring, "--grpcAddr", grpcAddr,
		"--secureGRPCAddr", secure, "--httpsAddr", https,
		// no meshNetworks file: a missing one means no networks
		"--networksConfig", filepath.Join(dir, "no-mesh-networks")}
	procEnv := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, commonEnv...)
	procEnv = append(procEnv, extraEnv...)
	switch fl {
	case Ours:
		procEnv = append(procEnv, "ISTIOD_CA_DIR="+filepath.Join(dir, "ca"))
	case Istio:
		// ControlZ would take the fixed port 9876
		args = append(args, "--ctrlz_port", "0")
	default:
		return nil, fmt.Errorf("unknown flavor %q", fl)
	}
	logPath := filepath.Join(dir, "istiod.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		logf.Close()
		return nil, err
	}
	p := &plane{flavor: fl, kube: env, dynamic: dyn, dir: dir, http: httpAddr, grpc: grpcAddr, monitoring: monitoring, logPath: logPath, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = procEnv
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// the process dies with the test binary, whatever ends it
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() {
		p.exitErr = p.cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

// waitReady polls /ready; timeout only guards against a hang.
func (p *plane) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		if err := p.alive(); err != nil {
			return err
		}
		resp, err := client.Get("http://" + p.http + "/ready")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready within %v\n%s", p.flavor, timeout, p.logTail(4096))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive reports an exit as an error.
func (p *plane) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited: %v\n%s", p.flavor, p.exitErr, p.logTail(4096))
	default:
		return nil
	}
}

func (p *plane) stop() {
	if p == nil || p.cmd == nil {
		return
	}
	testproc.Stop(p.cmd.Process, p.exited, 10*time.Second)
}

// logTail returns the last n bytes of the process's output.
func (p *plane) logTail(n int64) string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
