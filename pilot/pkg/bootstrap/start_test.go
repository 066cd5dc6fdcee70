package bootstrap_test

import (
	"net"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
)

// failLateStart builds a file-mode server whose last listener (the
// webhooks' --httpsAddr) is taken, starts it, and returns the addresses
// the earlier listeners were bound to.
func failLateStart(t *testing.T) (*bootstrap.Server, []string) {
	t.Helper()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	args := bootstrap.DefaultArgs()
	args.ConfigDir = "../../../manifests/examples/bookinfo"
	args.MeshConfigFile = "../../../manifests/examples/mesh.yaml"
	args.NetworksConfigFile = filepath.Join(t.TempDir(), "no-networks-file")
	args.HTTPAddr, args.MonitoringAddr, args.GRPCAddr, args.SecureGRPCAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	args.HTTPSAddr = taken.Addr().String()
	args.ShutdownDuration = 5 * time.Second
	args.Security.CADir = filepath.Join(t.TempDir(), "ca")
	srv, err := bootstrap.NewServer(args)
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Start()
	if err == nil || !strings.Contains(err.Error(), "--httpsAddr") {
		srv.Shutdown()
		t.Fatalf("Start with --httpsAddr taken: %v", err)
	}
	return srv, []string{srv.HTTPAddr(), srv.MonitoringAddr(), srv.GRPCAddr(), srv.SecureGRPCAddr()}
}

// A Start that fails at its last listener undoes what it started: the
// ports bound before are free again and the goroutines are gone, without
// a Shutdown.
func TestFailedStartReleasesEverything(t *testing.T) {
	// a first failure starts whatever the process starts once (e.g. the
	// runtime's and libraries' own goroutines): the baseline is after it
	_, addrs := failLateStart(t)
	for _, addr := range addrs {
		assertFree(t, addr)
	}
	baseline := runtime.NumGoroutine()
	srv, addrs := failLateStart(t)
	for _, addr := range addrs {
		assertFree(t, addr)
	}
	// goroutines that returned may take a moment to be counted as gone;
	// the bound only guards against a leak hanging the test
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			var b strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Fatalf("%d goroutines after a failed Start, %d before:\n%s", runtime.NumGoroutine(), baseline, b.String())
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	// a Shutdown after the failure has nothing left to do
	srv.Shutdown()
}

func assertFree(t *testing.T, addr string) {
	t.Helper()
	if addr == "" {
		t.Fatal("a listener was not bound before the failure")
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Errorf("port of %s still taken after the failed Start: %v", addr, err)
		return
	}
	_ = l.Close()
}
