package bootstrap_test

import (
	"encoding/json"
	"net/http"
	"os"
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
	args.HTTPAddr, args.MonitoringAddr, args.GRPCAddr, args.SecureGRPCAddr, args.HTTPSAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
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

// Without a cluster the CA keeps its root in its directory, shows it on
// /debug/ca, and a restart on the same directory keeps the same root.
func TestRootWithoutClusterIsAFileAndOnDebug(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	start := func() (*bootstrap.Server, string) {
		args := bootstrap.DefaultArgs()
		args.ConfigDir = "../../../manifests/examples/bookinfo"
		args.MeshConfigFile = "../../../manifests/examples/mesh.yaml"
		args.NetworksConfigFile = filepath.Join(t.TempDir(), "no-networks-file")
		args.HTTPAddr, args.MonitoringAddr, args.GRPCAddr, args.SecureGRPCAddr, args.HTTPSAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
		args.Security.CADir = dir
		srv, err := bootstrap.NewServer(args)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + srv.HTTPAddr() + "/debug/ca")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc struct {
			TrustDomain string `json:"trustDomain"`
			RootCert    string `json:"rootCert"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || doc.TrustDomain != "cluster.local" || doc.RootCert == "" {
			t.Fatalf("/debug/ca: %v %+v", err, doc)
		}
		return srv, doc.RootCert
	}
	srv, root := start()
	file, err := os.ReadFile(filepath.Join(dir, "root-cert.pem"))
	if err != nil || string(file) != root {
		t.Fatalf("root file: %v (equal to /debug/ca: %v)", err, string(file) == root)
	}
	srv.Shutdown()
	srv2, root2 := start()
	defer srv2.Shutdown()
	if root2 != root {
		t.Error("a restart minted another root")
	}
}
