package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/pkg/kube/leaderelection"
	"github.com/meshplane/istiod/tests/kube"

	"github.com/meshplane/istiod/tests/testproc"
)

// istiod is an in-process control plane pointed at a test API server.
type istiod struct {
	t        *testing.T
	srv      *bootstrap.Server
	stopOnce sync.Once
}

type option func(*bootstrap.PilotArgs)

func withRevision(r string) option { return func(a *bootstrap.PilotArgs) { a.Revision = r } }

func withMeshFile(p string) option { return func(a *bootstrap.PilotArgs) { a.MeshConfigFile = p } }

// startIstiod runs istiod against env with its own namespace (for its mesh
// ConfigMap) and free loopback ports; it stops when the test ends.
func startIstiod(t *testing.T, env *kube.Env, ns string, opts ...option) *istiod {
	t.Helper()
	args := bootstrap.DefaultArgs()
	args.KubeConfig = env.Kubeconfig
	args.Namespace = ns
	args.HTTPAddr = "127.0.0.1:0"
	args.MonitoringAddr = "127.0.0.1:0"
	args.GRPCAddr = "127.0.0.1:0"
	args.SecureGRPCAddr = "127.0.0.1:0"
	args.HTTPSAddr = "127.0.0.1:0"
	args.MeshConfigFile = filepath.Join(t.TempDir(), "no-mesh-file")
	args.NetworksConfigFile = filepath.Join(t.TempDir(), "no-networks-file")
	args.ShutdownDuration = 5 * time.Second
	args.PodName = fmt.Sprintf("istiod-%d", istiodCount.Add(1))
	args.Security.LeaderElection = leaderelection.Timing{LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond}
	for _, o := range opts {
		o(&args)
	}
	srv, err := bootstrap.NewServer(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	d := &istiod{t: t, srv: srv}
	t.Cleanup(d.stop)
	eventually(t, "ready", func() (bool, string) {
		code, body := d.get("/ready")
		return code == 200, fmt.Sprintf("%d %s", code, body)
	})
	return d
}

func (d *istiod) stop() { d.stopOnce.Do(d.srv.Shutdown) }

// istiodCount names the in-process replicas (their pod names, the Lease
// identities), so that two of them are two replicas.
var istiodCount atomic.Int32

func (d *istiod) get(path string) (int, []byte) {
	resp, err := http.Get("http://" + d.srv.HTTPAddr() + path)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name, Namespace string
		Labels          map[string]string
		Annotations     map[string]string
	} `json:"metadata"`
	Spec map[string]any `json:"spec"`
}

// configz returns the objects of one namespace.
func (d *istiod) configz(ns string) []object {
	d.t.Helper()
	code, body := d.get("/debug/configz")
	if code != 200 {
		d.t.Fatalf("configz: %d %s", code, body)
	}
	var all []object
	if err := json.Unmarshal(body, &all); err != nil {
		d.t.Fatal(err)
	}
	var out []object
	for _, o := range all {
		if o.Metadata.Namespace == ns {
			out = append(out, o)
		}
	}
	return out
}

func (d *istiod) find(kind, ns, name string) *object {
	for _, o := range d.configz(ns) {
		if o.Kind == kind && o.Metadata.Name == name {
			o := o
			return &o
		}
	}
	return nil
}

func (d *istiod) mesh() string {
	_, body := d.get("/debug/mesh")
	return string(body)
}

type problem struct{ Severity, Source, Subject, Object, Field, Message string }

func (d *istiod) warnings() []problem {
	_, body := d.get("/debug/warningz")
	var out []problem
	_ = json.Unmarshal(body, &out)
	return out
}

// eventually polls cond (see testproc.Eventually).
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testproc.Eventually(t, 30*time.Second, what, cond)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func contains(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
