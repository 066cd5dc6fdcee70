package bootstrap_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/pkg/log/logtest"
)

// newFileServerArgs are the arguments of istiod on the bundled example, on
// free loopback ports, without a cluster, with the CA in caDir.
func newFileServerArgs(t *testing.T, caDir string) bootstrap.PilotArgs {
	args := bootstrap.DefaultArgs()
	args.ConfigDir = "../../../manifests/examples/bookinfo"
	args.MeshConfigFile = "../../../manifests/examples/mesh.yaml"
	args.NetworksConfigFile = filepath.Join(t.TempDir(), "no-networks-file")
	args.HTTPAddr, args.MonitoringAddr, args.GRPCAddr, args.SecureGRPCAddr, args.HTTPSAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	args.Security.CADir = caDir
	return args
}

// A CA directory istiod cannot create stops it at once with an error that
// names the directory and the reason, instead of retrying with its ports
// closed.
func TestUnusableCADirFailsFast(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{filepath.Join(file, "ca"): "not a directory"}
	ro := filepath.Join(tmp, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if probe, err := os.MkdirTemp(ro, "probe"); err == nil {
		// root writes anywhere: only the file in the way fails
		_ = os.Remove(probe)
		t.Log("read-only directory is writable (running as root?): not checked")
	} else {
		cases[filepath.Join(ro, "ca")] = "permission denied"
	}
	for dir, reason := range cases {
		_, err := bootstrap.NewServer(newFileServerArgs(t, dir))
		if err == nil {
			t.Fatalf("%s: server built", dir)
		}
		for _, want := range []string{"CA directory " + dir + ":", reason, "ISTIOD_CA_DIR"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	}
}

// istiod says at start where it keeps the CA root.
func TestCADirLogged(t *testing.T) {
	logs := logtest.Capture(t)
	dir := filepath.Join(t.TempDir(), "ca")
	srv, err := bootstrap.NewServer(newFileServerArgs(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	if got := logs.Lines("INFO", "CA root kept in "+dir+" (ISTIOD_CA_DIR)"); len(got) != 1 {
		t.Errorf("INFO lines %q", got)
	}
}
