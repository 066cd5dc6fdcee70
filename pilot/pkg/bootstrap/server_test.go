package bootstrap_test

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
)

// startFileServer runs istiod on the bundled example, on free loopback
// ports, without a cluster.
func startFileServer(t *testing.T) *bootstrap.Server {
	t.Helper()
	args := bootstrap.DefaultArgs()
	args.ConfigDir = "../../../manifests/examples/bookinfo"
	args.MeshConfigFile = "../../../manifests/examples/mesh.yaml"
	args.NetworksConfigFile = filepath.Join(t.TempDir(), "no-networks-file")
	args.HTTPAddr, args.MonitoringAddr, args.GRPCAddr, args.SecureGRPCAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	args.ShutdownDuration = 5 * time.Second
	args.Security.CADir = filepath.Join(t.TempDir(), "ca")
	srv, err := bootstrap.NewServer(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	return srv
}

// /ready turns green only when xDS can serve: a proxy admitted by the
// readiness probe must never be refused with Unavailable. The probe is
// polled as fast as it answers, so a window between the sources' sync and
// the first push context would be seen.
func TestReadyMeansXDSServes(t *testing.T) {
	srv := startFileServer(t)
	defer srv.Shutdown()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("http://" + srv.HTTPAddr() + "/ready")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/ready still %d", resp.StatusCode)
		}
	}
	if !srv.DiscoveryServer().Ready() {
		t.Fatal("/ready answered 200 before the first push context existed")
	}
}

// Shutdown returns only once the push engine has stopped: no push runs
// after it.
func TestShutdownWaitsForThePushEngine(t *testing.T) {
	srv := startFileServer(t)
	deadline := time.Now().Add(30 * time.Second)
	for !srv.DiscoveryServer().Ready() {
		if time.Now().After(deadline) {
			t.Fatal("never ready")
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv.Shutdown()
	select {
	case <-srv.PushEngine().Done():
	default:
		t.Fatal("Shutdown returned while the push engine was still running")
	}
}
