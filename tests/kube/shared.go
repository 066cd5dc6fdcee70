package kube

import (
	"os"
	"sync"
	"testing"
	"time"
)

var shared struct {
	mu      sync.Mutex
	inMain  bool
	started bool
	env     *Env
	err     error
	dir     string
}

// Main runs the package's tests and then stops the shared API server (if a
// test started one), and exits. Call it from TestMain to use Shared:
//
//	func TestMain(m *testing.M) { kube.Main(m) }
func Main(m *testing.M) {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()

	code := m.Run()

	shared.mu.Lock()
	if shared.env != nil {
		shared.env.Stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	shared.mu.Unlock()
	os.Exit(code)
}

// Shared returns the API server shared by the tests of this test binary,
// starting it on first use with every CRD of manifests/crds/ installed. The
// server outlives the calling test: Main stops it after the last test. If
// the start failed once, every later caller fails with the same error.
func Shared(t testing.TB) *Env {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.inMain {
		t.Fatal("kube.Shared needs the package's TestMain to call kube.Main: func TestMain(m *testing.M) { kube.Main(m) }")
	}
	if !shared.started {
		shared.started = true
		begin := time.Now()
		shared.env, shared.err = startShared()
		if shared.err == nil {
			t.Logf("kube: shared API server %s ready in %v", shared.env.RESTConfig.Host, time.Since(begin).Round(time.Millisecond))
		}
	}
	if shared.err != nil {
		t.Fatalf("kube: shared API server: %v", shared.err)
	}
	return shared.env
}

func startShared() (*Env, error) {
	dir, err := os.MkdirTemp("", "istiod-kube-")
	if err != nil {
		return nil, err
	}
	shared.dir = dir
	names, err := crdSelection(options{skip: map[string]bool{}})
	if err != nil {
		return nil, err
	}
	e, err := start(dir, names, options{})
	if err != nil {
		if e != nil {
			e.Stop()
		}
		return nil, err
	}
	e.shared = true
	return e, nil
}
