package multicluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube"
)

// recorder is a Handler that notes every call; a cluster's components
// synced when synced[ID] is set.
type recorder struct {
	mu     sync.Mutex
	events []string
	synced map[string]*atomic.Bool
}

func (r *recorder) ClusterAdded(c *Cluster) func() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "add "+c.ID+" "+c.SecretName)
	s := r.synced[c.ID]
	if s == nil {
		s = &atomic.Bool{}
		s.Store(true)
		r.synced[c.ID] = s
	}
	return s.Load
}

func (r *recorder) ClusterRemoved(c *Cluster, replacement *Cluster) {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-c.Stopped():
	default:
		r.events = append(r.events, "removed while running "+c.ID)
	}
	ev := "remove " + c.ID
	if replacement != nil {
		ev += " replaced"
	}
	r.events = append(r.events, ev)
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

type fixture struct {
	t      *testing.T
	local  kube.Client
	ctl    *Controller
	rec    *recorder
	board  *diag.Board
	builds atomic.Int32
}

// newFixture runs a controller on a fake cluster; a kubeconfig "bad…"
// cannot be built into a client.
// The seeds are secrets present before the controller starts.
func newFixture(t *testing.T, timeout time.Duration, seeds ...*corev1.Secret) *fixture {
	objs := make([]runtime.Object, 0, len(seeds))
	for _, s := range seeds {
		objs = append(objs, s)
	}
	f := &fixture{t: t, local: kube.NewFakeClient(objs...), rec: &recorder{synced: map[string]*atomic.Bool{}}, board: diag.New(time.Now)}
	f.ctl = NewController(Options{Client: f.local, ClusterID: "cluster1", Namespace: "istio-system", SyncTimeout: timeout,
		Problems: f.board,
		BuildClient: func(kubeconfig []byte, id string) (kube.Client, error) {
			f.builds.Add(1)
			if strings.HasPrefix(string(kubeconfig), "bad") {
				return nil, errors.New("kubeconfig cannot be loaded: " + string(kubeconfig))
			}
			return kube.NewFakeClient(), nil
		}})
	f.ctl.AddHandler(f.rec)
	f.rec.synced["held"] = &atomic.Bool{} // a cluster named held syncs when told
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	f.ctl.Run(stop)
	return f
}

func (f *fixture) writeSecret(name string, data map[string]string) {
	f.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "istio-system",
		Labels: map[string]string{SecretLabel: "true"}}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	secrets := f.local.Kube().CoreV1().Secrets("istio-system")
	if _, err := secrets.Get(context.Background(), name, metav1.GetOptions{}); err == nil {
		_, err = secrets.Update(context.Background(), s, metav1.UpdateOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		return
	}
	if _, err := secrets.Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) await(what string, cond func() (bool, string)) {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: %s", what, detail)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (f *fixture) awaitClusters(want string) {
	f.t.Helper()
	f.await("clusters "+want, func() (bool, string) {
		var got []string
		for _, c := range f.ctl.Clusters() {
			got = append(got, c.ID+"="+c.SyncStatus)
		}
		return strings.Join(got, ",") == want, strings.Join(got, ",")
	})
}

func (f *fixture) awaitEvents(want ...string) {
	f.t.Helper()
	f.await("handler calls", func() (bool, string) {
		got := f.rec.seen()
		return strings.Join(got, "\n") == strings.Join(want, "\n"), strings.Join(got, "\n")
	})
}

func TestSecretAddsItsClusters(t *testing.T) {
	f := newFixture(t, 0)
	f.writeSecret("istio-remote-secret-east", map[string]string{"cluster2": "k2", "cluster3": "k3"})
	f.awaitClusters("cluster2=synced,cluster3=synced")
	f.awaitEvents("add cluster2 istio-system/istio-remote-secret-east", "add cluster3 istio-system/istio-remote-secret-east")
	f.await("HasSynced", func() (bool, string) { return f.ctl.HasSynced(), "" })
	if c := f.ctl.Cluster("cluster2"); c == nil || c.Client == nil {
		t.Fatalf("cluster2: %+v", c)
	}
	// the same kubeconfig again: nothing
	f.writeSecret("istio-remote-secret-east", map[string]string{"cluster2": "k2", "cluster3": "k3"})
	time.Sleep(100 * time.Millisecond)
	if n := f.builds.Load(); n != 2 {
		t.Errorf("%d clients built for two clusters", n)
	}
}

func TestSecretLosingAClusterStopsIt(t *testing.T) {
	f := newFixture(t, 0)
	f.writeSecret("remote", map[string]string{"cluster2": "k2", "cluster3": "k3"})
	f.awaitClusters("cluster2=synced,cluster3=synced")
	c3 := f.ctl.Cluster("cluster3")
	f.writeSecret("remote", map[string]string{"cluster2": "k2"})
	f.awaitClusters("cluster2=synced")
	f.awaitEvents("add cluster2 istio-system/remote", "add cluster3 istio-system/remote", "remove cluster3")
	select {
	case <-c3.Stopped():
	default:
		t.Fatal("cluster3 was not stopped")
	}
	if err := f.local.Kube().CoreV1().Secrets("istio-system").Delete(context.Background(), "remote", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.awaitClusters("")
	f.awaitEvents("add cluster2 istio-system/remote", "add cluster3 istio-system/remote", "remove cluster3", "remove cluster2")
}

// New credentials for a cluster: the new client is built and synced
// beside the old one, which goes only then.
func TestRotatedCredentialsMakeBeforeBreak(t *testing.T) {
	f := newFixture(t, 0)
	f.writeSecret("remote", map[string]string{"cluster2": "k2"})
	f.awaitClusters("cluster2=synced")
	old := f.ctl.Cluster("cluster2")
	held := &atomic.Bool{} // the new cluster's components do not sync yet
	f.rec.mu.Lock()
	f.rec.synced["cluster2"] = held
	f.rec.mu.Unlock()
	f.writeSecret("remote", map[string]string{"cluster2": "k2-rotated"})
	f.awaitClusters("cluster2=syncing")
	f.awaitEvents("add cluster2 istio-system/remote", "add cluster2 istio-system/remote")
	select {
	case <-old.Stopped():
		t.Fatal("the old cluster stopped before the new one synced")
	case <-time.After(100 * time.Millisecond):
	}
	held.Store(true)
	f.awaitClusters("cluster2=synced")
	f.awaitEvents("add cluster2 istio-system/remote", "add cluster2 istio-system/remote", "remove cluster2 replaced")
	if f.ctl.Cluster("cluster2") == old {
		t.Fatal("the old cluster still serves")
	}
}

// A secret deleted while its rotated cluster syncs stops both.
func TestDeletedWhileRotatingStopsBoth(t *testing.T) {
	f := newFixture(t, 0)
	f.writeSecret("remote", map[string]string{"cluster2": "k2"})
	f.awaitClusters("cluster2=synced")
	old := f.ctl.Cluster("cluster2")
	f.rec.mu.Lock()
	f.rec.synced["cluster2"] = &atomic.Bool{}
	f.rec.mu.Unlock()
	f.writeSecret("remote", map[string]string{"cluster2": "k2-rotated"})
	f.awaitClusters("cluster2=syncing")
	pending := f.ctl.Cluster("cluster2")
	if err := f.local.Kube().CoreV1().Secrets("istio-system").Delete(context.Background(), "remote", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.awaitClusters("")
	for _, c := range []*Cluster{old, pending} {
		select {
		case <-c.Stopped():
		case <-time.After(5 * time.Second):
			t.Fatal("a cluster of the deleted secret still runs")
		}
	}
}

func TestUnusableSecretsAreReportedAndRetried(t *testing.T) {
	f := newFixture(t, 0)
	f.writeSecret("remote", map[string]string{"cluster1": "k1", "cluster2": "bad-yaml", "cluster3": "k3"})
	f.awaitClusters("cluster3=synced")
	f.await("problems", func() (bool, string) {
		var got []string
		for _, p := range f.board.List() {
			got = append(got, fmt.Sprintf("%s %s %s: %s", p.Severity, p.Object, p.Field, p.Message))
		}
		want := []string{
			"error Secret istio-system/remote data.cluster2: cluster cluster2: kubeconfig cannot be loaded: bad-yaml",
			"warning Secret istio-system/remote data.cluster1: cluster cluster1 is the cluster istiod runs in: ignored",
		}
		return strings.Join(got, "\n") == strings.Join(want, "\n") || strings.Join(got, "\n") == strings.Join([]string{want[1], want[0]}, "\n"),
			strings.Join(got, "\n")
	})
	// retried with backoff while the secret stays as it is
	f.await("retries", func() (bool, string) { return f.builds.Load() >= 4, fmt.Sprint(f.builds.Load(), " builds") })
	f.writeSecret("remote", map[string]string{"cluster2": "k2", "cluster3": "k3"})
	f.awaitClusters("cluster2=synced,cluster3=synced")
	f.await("problems cleared", func() (bool, string) { return len(f.board.List()) == 0, fmt.Sprint(f.board.List()) })
}

func TestAnotherSecretCannotTakeACluster(t *testing.T) {
	f := newFixture(t, 0)
	f.writeSecret("first", map[string]string{"cluster2": "k2"})
	f.awaitClusters("cluster2=synced")
	f.writeSecret("second", map[string]string{"cluster2": "k2-other"})
	f.await("warning", func() (bool, string) {
		for _, p := range f.board.List() {
			if p.Object == "Secret istio-system/second" && strings.Contains(p.Message, "already been registered by secret istio-system/first") {
				return true, ""
			}
		}
		return false, fmt.Sprint(f.board.List())
	})
	if c := f.ctl.Cluster("cluster2"); c.SecretName != "istio-system/first" {
		t.Fatalf("cluster2 now from %s", c.SecretName)
	}
}

// A cluster of a secret present at start holds up HasSynced until it
// synced or, as this one, timed out.
func TestSyncTimeout(t *testing.T) {
	f := newFixture(t, 300*time.Millisecond, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "remote", Namespace: "istio-system",
		Labels: map[string]string{SecretLabel: "true"}}, Data: map[string][]byte{"held": []byte("k")}})
	f.awaitClusters("held=syncing")
	if f.ctl.HasSynced() {
		t.Fatal("synced before the cluster synced or timed out")
	}
	f.awaitClusters("held=timeout")
	if !f.ctl.HasSynced() {
		t.Fatal("a timed-out cluster holds up HasSynced")
	}
	f.rec.mu.Lock()
	f.rec.synced["held"].Store(true)
	f.rec.mu.Unlock()
	f.awaitClusters("held=synced")
}

// A cluster added after the start does not make the controller unsynced.
func TestLaterClustersDoNotUnsync(t *testing.T) {
	f := newFixture(t, 0)
	f.await("HasSynced", func() (bool, string) { return f.ctl.HasSynced(), "" })
	f.writeSecret("remote", map[string]string{"held": "k"})
	f.awaitClusters("held=syncing")
	if !f.ctl.HasSynced() {
		t.Fatal("a later cluster made the controller unsynced")
	}
}

func TestUntrustedKubeconfig(t *testing.T) {
	const base = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
users:
- name: u
  user:
`
	for _, tc := range []struct {
		user, allowed, err string
	}{
		{user: "    token: abc", err: ""},
		{user: "    exec: {command: /bin/sh, apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}", err: "kubeconfig is not allowed: exec is not allowed"},
		{user: "    exec: {command: /bin/sh, apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}", allowed: "exec", err: ""},
		{user: "    tokenFile: /var/run/token", err: "kubeconfig is not allowed: tokenFile is not allowed"},
		{user: "    client-key: /etc/key", err: "kubeconfig is not allowed: clientKey is not allowed"},
		{user: "    auth-provider: {name: gcp}", err: "kubeconfig is not allowed: auth provider gcp is not allowed"},
		{user: `    auth-provider: {name: oidc, config: {client-id: "x", id-token: "tok", idp-issuer-url: "https://127.0.0.1"}}`, err: ""},
	} {
		_, err := restConfigFor([]byte(base+tc.user), strings.Split(tc.allowed, ","))
		if got := fmt.Sprint(err); (tc.err == "" && err != nil) || (tc.err != "" && got != tc.err) {
			t.Errorf("%s (allowed %q): %v, want %q", strings.TrimSpace(tc.user), tc.allowed, err, tc.err)
		}
	}
	if _, err := restConfigFor(nil, nil); fmt.Sprint(err) != "kubeconfig is empty" {
		t.Errorf("empty: %v", err)
	}
}
