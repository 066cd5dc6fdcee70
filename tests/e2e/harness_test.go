package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshplane/istiod/tests/testproc"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "istiod-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if binary, err = testproc.BuildIstiod(dir); err != nil {
		fmt.Fprintln(os.Stderr, "build istiod:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func freePortB(b *testing.B) string { return freePortTB(b) }

func freePort(t *testing.T) string { return freePortTB(t) }

// freePortTB returns a loopback address with a port that was free a moment ago.
func freePortTB(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// daemon is a running istiod process.
type daemon struct {
	t          *testing.T
	cmd        *exec.Cmd
	http, mon  string
	grpc       string
	secure     string
	logMu      sync.Mutex
	log        strings.Builder
	exited     chan struct{}
	exitErr    error
	terminated bool
}

type lockedWriter struct{ d *daemon }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.d.logMu.Lock()
	defer w.d.logMu.Unlock()
	return w.d.log.Write(p)
}

func (d *daemon) logs() string {
	d.logMu.Lock()
	defer d.logMu.Unlock()
	return d.log.String()
}

// start runs istiod with the given extra args on free loopback ports; it is
// stopped when the test ends.
func start(t *testing.T, args ...string) *daemon {
	t.Helper()
	d := &daemon{t: t, http: freePort(t), mon: freePort(t), grpc: freePort(t), exited: make(chan struct{})}
	startProcess(t, d, args...)
	t.Cleanup(func() {
		d.stop()
		if t.Failed() {
			t.Logf("istiod log:\n%s", d.logs())
		}
	})
	return d
}

// startProcess runs the binary for d with the listener flags and args.
func startProcess(tb testing.TB, d *daemon, args ...string) {
	tb.Helper()
	if d.grpc == "" {
		d.grpc = "127.0.0.1:0"
	}
	if d.secure == "" {
		d.secure = "127.0.0.1:0"
	}
	all := append([]string{"discovery", "--httpAddr", d.http, "--monitoringAddr", d.mon,
		"--grpcAddr", d.grpc, "--secureGRPCAddr", d.secure, "--httpsAddr", "127.0.0.1:0", "--fileResync", "1h"}, args...)
	d.cmd = exec.Command(binary, all...)
	// the CA keeps its root in a directory of the test, not the working directory
	d.cmd.Env = append(os.Environ(), "ISTIOD_CA_DIR="+filepath.Join(tb.TempDir(), "ca"))
	d.cmd.Stdout = lockedWriter{d}
	d.cmd.Stderr = lockedWriter{d}
	if err := d.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		d.exitErr = d.cmd.Wait()
		close(d.exited)
	}()
}

func (d *daemon) stop() {
	if d.terminated {
		return
	}
	d.terminated = true
	testproc.Stop(d.cmd.Process, d.exited, 20*time.Second)
}

func (d *daemon) get(path string) (int, []byte, error) {
	resp, err := http.Get("http://" + d.http + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// eventually polls cond until it holds (see testproc.Eventually).
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testproc.Eventually(t, 20*time.Second, what, cond)
}

func (d *daemon) waitReady(t *testing.T) {
	t.Helper()
	eventually(t, "ready", func() (bool, string) {
		select {
		case <-d.exited:
			t.Fatalf("istiod exited: %v\n%s", d.exitErr, d.logs())
		default:
		}
		code, body, err := d.get("/ready")
		return err == nil && code == 200, fmt.Sprintf("%d %s %v", code, body, err)
	})
}

type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name            string `json:"name"`
		Namespace       string `json:"namespace"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Spec map[string]any `json:"spec"`
}

func (d *daemon) configz(t *testing.T) []object { return configzCount(t, d) }

func configzCount(t testing.TB, d *daemon) []object {
	t.Helper()
	code, body, err := d.get("/debug/configz")
	if err != nil || code != 200 {
		t.Fatalf("configz: %d %v", code, err)
	}
	var out []object
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("configz: %v\n%s", err, body)
	}
	return out
}

func find(objs []object, kind, ns, name string) *object {
	for i := range objs {
		o := &objs[i]
		if o.Kind == kind && o.Metadata.Namespace == ns && o.Metadata.Name == name {
			return o
		}
	}
	return nil
}

type problem struct {
	Severity, Source, Subject, Object, Field, Message string
}

func (d *daemon) warningz(t *testing.T) []problem {
	t.Helper()
	_, body, err := d.get("/debug/warningz")
	if err != nil {
		t.Fatal(err)
	}
	var out []problem
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("warningz: %v\n%s", err, body)
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// write then rename, as editors and ConfigMap volumes do
	tmp := path + ".tmp~"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func getURL(url string) (int, []byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}
