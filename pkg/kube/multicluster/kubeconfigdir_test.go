package multicluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube"
)

// kubeconfigFor is a kubeconfig whose current context names cluster,
// with a token telling versions apart.
func kubeconfigFor(cluster, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster: {server: "https://127.0.0.1:6443"}
contexts:
- name: ctx-%[1]s
  context: {cluster: %[1]s, user: u}
current-context: ctx-%[1]s
users:
- name: u
  user: {token: %[2]s}
`, cluster, token)
}

func writeKubeconfig(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// PILOT_MULTICLUSTER_KUBECONFIG_PATH: the clusters are the kubeconfigs of
// the directory's YAML files (subdirectories included, other files not),
// named by their current context's cluster, keyed "/<ID>"; remote secrets
// are not read; a changed file rotates its cluster, a removed one stops
// it; a file that does not parse changes nothing; two files of one
// cluster with different contents keep the cluster as it was.
func TestKubeconfigDirectory(t *testing.T) {
	dir := t.TempDir()
	writeKubeconfig(t, filepath.Join(dir, "east.yaml"), kubeconfigFor("cluster2", "a"))
	writeKubeconfig(t, filepath.Join(dir, "nested", "west.yml"), kubeconfigFor("cluster3", "a"))
	writeKubeconfig(t, filepath.Join(dir, "ignored.txt"), kubeconfigFor("cluster4", "a"))
	var builds atomic.Int32
	f := &fixture{t: t, local: kube.NewFakeClient(), rec: &recorder{synced: map[string]*atomic.Bool{}}, board: diag.New(time.Now)}
	f.ctl = NewController(Options{Client: f.local, ClusterID: "cluster1", Namespace: "istio-system", KubeconfigDir: dir, Problems: f.board,
		BuildClient: func([]byte, string) (kube.Client, error) {
			builds.Add(1)
			return kube.NewFakeClient(), nil
		}})
	f.ctl.AddHandler(f.rec)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	f.ctl.Run(stop)
	f.awaitClusters("cluster2=synced,cluster3=synced")
	f.await("HasSynced", func() (bool, string) { return f.ctl.HasSynced(), "" })
	f.awaitEvents("add cluster2 /cluster2", "add cluster3 /cluster3")

	// a remote secret is not read
	f.writeSecret("remote", map[string]string{"cluster5": "k5"})

	// rotated: make before break
	writeKubeconfig(t, filepath.Join(dir, "east.yaml"), kubeconfigFor("cluster2", "b"))
	f.awaitEvents("add cluster2 /cluster2", "add cluster3 /cluster3", "add cluster2 /cluster2", "remove cluster2 replaced")

	// a file that does not parse: nothing changes
	writeKubeconfig(t, filepath.Join(dir, "broken.yaml"), "clusters: [")
	if err := os.Remove(filepath.Join(dir, "nested", "west.yml")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	f.awaitClusters("cluster2=synced,cluster3=synced")
	if err := os.Remove(filepath.Join(dir, "broken.yaml")); err != nil {
		t.Fatal(err)
	}
	f.awaitClusters("cluster2=synced")
	f.awaitEvents("add cluster2 /cluster2", "add cluster3 /cluster3", "add cluster2 /cluster2", "remove cluster2 replaced", "remove cluster3")

	// two files of cluster2 that differ: it keeps what it has
	n := builds.Load()
	writeKubeconfig(t, filepath.Join(dir, "east-copy.yaml"), kubeconfigFor("cluster2", "c"))
	f.await("the conflict reported", func() (bool, string) {
		for _, p := range f.board.List() {
			if strings.Contains(p.Message, `multiple file-backed kubeconfigs found for cluster "cluster2"`) {
				return true, ""
			}
		}
		return false, fmt.Sprint(f.board.List())
	})
	f.awaitClusters("cluster2=synced")
	if builds.Load() != n {
		t.Fatal("a conflicting file rebuilt the cluster")
	}
	if _, err := f.local.Kube().CoreV1().Secrets("istio-system").Get(context.Background(), "remote", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if f.ctl.Cluster("cluster5") != nil {
		t.Fatal("a remote secret was read although the clusters come from files")
	}
}

func TestClusterIDOfKubeconfig(t *testing.T) {
	for _, tc := range []struct{ kubeconfig, want string }{
		{kubeconfigFor("east", "t"), "east"},
		// no current context: the first context, by name, that names a cluster
		{"apiVersion: v1\nkind: Config\nclusters:\n- {name: a, cluster: {server: https://x}}\n- {name: b, cluster: {server: https://x}}\n" +
			"contexts:\n- {name: ctx-z, context: {cluster: a}}\n- {name: ctx-y, context: {cluster: b}}\n", "b"},
		// no context: the first cluster
		{"apiVersion: v1\nkind: Config\nclusters:\n- {name: d, cluster: {server: https://x}}\n- {name: c, cluster: {server: https://x}}\n", "c"},
		{"apiVersion: v1\nkind: Config\n", "error: unable to determine cluster ID from kubeconfig"},
	} {
		d := newKubeconfigDir(t.TempDir(), func(string) {})
		writeKubeconfig(t, filepath.Join(d.root, "k.yaml"), tc.kubeconfig)
		err := d.read()
		got := strings.Join(d.keys(), ",")
		if err != nil {
			got = "error: " + strings.TrimPrefix(err.Error(), filepath.Join(d.root, "k.yaml")+": ")
		} else {
			got = strings.TrimPrefix(got, "/")
		}
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.kubeconfig, got, tc.want)
		}
	}
}
