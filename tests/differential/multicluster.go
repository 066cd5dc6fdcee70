package differential

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/meshplane/istiod/tests/kube"
)

// A multicluster case runs in worlds of two clusters each: the primary
// (the API server its control plane reads, cluster ID Kubernetes, as
// before) and a remote, cluster2, an API server of its own started on
// the first multicluster case (startRemotes) and stopped with the
// fixture. The control plane reads the remote from a remote secret in
// the primary's istio-system, as `istioctl create-remote-secret` writes
// it (see remoteSecret).
//
// The two remotes allocate cluster IPs on their own as the primaries do,
// but the snapshots name only the primary's (normalise): a remote's
// Services declare theirs instead, in the static band of the service
// range (RemoteClusterIPs), which the primaries never allocate on their
// own (the API server takes dynamic addresses from above it), so that
// both worlds hold the same addresses and no primary Service shares one.
const (
	// RemoteClusterID is the remote cluster's ID: its remote secret's
	// data key and networking.istio.io/cluster annotation.
	RemoteClusterID = "cluster2"
	// NetworkLabel, on a cluster's istio-system namespace, names the
	// cluster's network; on a Service, it makes it a network gateway.
	NetworkLabel = "topology.istio.io/network"

	remoteSecretName = "istio-remote-secret-" + RemoteClusterID
	// the remote sentinels: Services of this namespace of the remote,
	// one at a time, on remoteSentinelPort (see Clusters.await)
	remoteSentinelNamespace = "differential-remote"
	remoteSentinelPort      = 15998
)

// RemoteClusterIPs is the range a remote's Services take their declared
// spec.clusterIP from: 10.0.0.6 to 10.0.0.15 (10.0.0.2 to 10.0.0.5 are
// the remote sentinels'). See the comment above.
var RemoteClusterIPs = netip.MustParsePrefix("10.0.0.0/28")

// Multicluster is a remote cluster in both worlds, for the cases run in
// it (Clusters.Run).
type Multicluster struct {
	// Mesh and Env are the control planes' mesh config and environment
	// (see Case), for every case run in the clusters.
	Mesh string
	Env  []string
	// Remote are the remote cluster's objects (YAML, as Case.Objects):
	// its Services declare spec.clusterIP in RemoteClusterIPs.
	Remote string
	// PrimaryNetwork and RemoteNetwork, when set, are the NetworkLabel of
	// istio-system in the primary and in the remote.
	PrimaryNetwork, RemoteNetwork string
}

// Clusters is a Multicluster set up in both worlds: the cases it runs
// compare proxies of the primaries.
type Clusters struct {
	f      *Fixture
	m      Multicluster
	remote [2]*world // Ours, Istio
	// sentinel counts the remote sentinels; the last is in both remotes
	sentinel int
	secret   bool
}

// startRemotes starts, once, the remote API server of each world (in
// parallel) with namespace istio-system. The caller holds f.mu.
func (f *Fixture) startRemotes() error {
	if f.remotesStarted {
		return f.remotesErr
	}
	f.remotesStarted = true
	begin := time.Now()
	var wg sync.WaitGroup
	var errs [2]error
	for i, fl := range []Flavor{Ours, Istio} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env, err := kube.StartServer(filepath.Join(f.dir, string(fl), "remote"))
			f.remotes[i] = env
			if err == nil {
				_, err = env.Kube.CoreV1().Namespaces().Create(context.Background(),
					&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: istiodNamespace}}, metav1.CreateOptions{})
			}
			if err != nil {
				errs[i] = fmt.Errorf("%s: starting the remote API server: %v", fl, err)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			f.remotesErr = err
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "differential: remote API servers ready in %v\n", time.Since(begin).Round(time.Millisecond))
	return nil
}

// Multicluster sets m up in both worlds: starts the remotes (once),
// restarts the control planes with m's mesh config and environment when
// they run otherwise, labels the networks, creates m's remote objects
// and the remote secret, waits until both control planes read the
// remote, and calls fn. When fn returns (or the test fails), the secret
// is deleted, both control planes are seen to drop the remote, the
// labels are removed and the remote's objects deleted: the worlds are as
// other cases expect them. It holds the fixture for its duration.
func (f *Fixture) Multicluster(t *testing.T, m Multicluster, fn func(c *Clusters)) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.startRemotes(); err != nil {
		t.Fatalf("differential: %v", err)
	}
	if err := f.configure(planeConfig{mesh: m.Mesh, env: strings.Join(m.Env, "\n")}); err != nil {
		t.Fatalf("restarting the control planes for the mesh config and environment: %v", err)
	}
	c := &Clusters{f: f, m: m}
	for i, fl := range []Flavor{Ours, Istio} {
		cfg := rest.CopyConfig(f.remotes[i].RESTConfig)
		cfg.WarningHandler = rest.NoWarnings{}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		f.planes[i].remote = f.remotes[i]
		w := newWorld(&plane{flavor: fl, kube: f.remotes[i], dynamic: dyn})
		w.keepClusterIPs = true
		c.remote[i] = w
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*caseTimeout)
	defer cancel()
	defer c.cleanup(t)
	if err := c.checkPrimaryIPs(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.label(ctx, m.PrimaryNetwork, m.RemoteNetwork); err != nil {
		t.Fatal(err)
	}
	objs, err := parseObjects(m.Remote)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range c.remote {
		if err := w.apply(ctx, objs, true); err != nil {
			t.Fatalf("%s: remote: %v", w.p.flavor, err)
		}
	}
	c.secret = true
	for i := range c.remote {
		if err := c.writeSecret(ctx, i, RemoteClusterID); err != nil {
			t.Fatal(err)
		}
	}
	c.await(t, true)
	fn(c)
}

// Run runs a case (see Fixture.Run) in the clusters: its objects go to
// both primaries, its proxy is one of theirs. The case takes the
// Multicluster's mesh config and environment; it gives none.
func (c *Clusters) Run(t *testing.T, cs Case) {
	t.Helper()
	if cs.Mesh != "" || len(cs.Env) > 0 {
		t.Fatal("a multicluster case takes the Multicluster's Mesh and Env")
	}
	cs.Mesh, cs.Env = c.m.Mesh, c.m.Env
	c.f.run(t, cs)
}

// RotateSecret gives the remote secret a new kubeconfig for the same
// cluster (the same credentials under other names, as a re-run of
// istioctl create-remote-secret with another context writes it) and
// waits until both control planes read the remote through it (a new
// remote sentinel).
func (c *Clusters) RotateSecret(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	for i := range c.remote {
		if err := c.writeSecret(ctx, i, RemoteClusterID+"-rotated"); err != nil {
			t.Fatal(err)
		}
	}
	c.await(t, true)
}

// DeleteSecret deletes the remote secret and waits until both control
// planes dropped the remote (its sentinel gone).
func (c *Clusters) DeleteSecret(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	if err := c.deleteSecret(ctx); err != nil {
		t.Fatal(err)
	}
	c.await(t, false)
}

// writeSecret creates or updates the remote secret of world i, its
// kubeconfig's cluster, user and context named name.
func (c *Clusters) writeSecret(ctx context.Context, i int, name string) error {
	kc, err := remoteKubeconfig(c.f.remotes[i].RESTConfig, name)
	if err != nil {
		return err
	}
	p := c.f.planes[i]
	secrets := p.kube.Kube.CoreV1().Secrets(istiodNamespace)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: remoteSecretName, Namespace: istiodNamespace,
			Labels:      map[string]string{"istio/multiCluster": "true"},
			Annotations: map[string]string{"networking.istio.io/cluster": RemoteClusterID}},
		Data: map[string][]byte{RemoteClusterID: kc},
	}
	cur, err := secrets.Get(ctx, remoteSecretName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
	case err == nil:
		cur.Data = s.Data
		_, err = secrets.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("%s: remote secret: %v", p.flavor, err)
	}
	return nil
}

func (c *Clusters) deleteSecret(ctx context.Context) error {
	c.secret = false
	for _, p := range c.f.planes {
		err := p.kube.Kube.CoreV1().Secrets(istiodNamespace).Delete(ctx, remoteSecretName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s: deleting the remote secret: %v", p.flavor, err)
		}
	}
	return nil
}

// remoteKubeconfig is a kubeconfig of cfg's API server with every
// credential inline, as `kubectl config view --raw --flatten` and
// istioctl create-remote-secret write it (a remote secret may not name
// files), its cluster, user and context named name.
func remoteKubeconfig(cfg *rest.Config, name string) ([]byte, error) {
	read := func(data []byte, file string) ([]byte, error) {
		if len(data) > 0 || file == "" {
			return data, nil
		}
		return os.ReadFile(file)
	}
	ca, err := read(cfg.CAData, cfg.CAFile)
	if err != nil {
		return nil, err
	}
	cert, err := read(cfg.CertData, cfg.CertFile)
	if err != nil {
		return nil, err
	}
	key, err := read(cfg.KeyData, cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cert, ClientKeyData: key}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	return clientcmd.Write(*kc)
}

// label sets (or, with "", removes) the NetworkLabel of istio-system in
// each world's primary and remote.
func (c *Clusters) label(ctx context.Context, primary, remote string) error {
	patch := func(env *kube.Env, network string) error {
		v := "null"
		if network != "" {
			v = fmt.Sprintf("%q", network)
		}
		body := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, NetworkLabel, v)
		_, err := env.Kube.CoreV1().Namespaces().Patch(ctx, istiodNamespace, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	for i, p := range c.f.planes {
		if err := patch(p.kube, primary); err != nil {
			return fmt.Errorf("%s: labelling the primary's %s: %v", p.flavor, istiodNamespace, err)
		}
		if err := patch(c.f.remotes[i], remote); err != nil {
			return fmt.Errorf("%s: labelling the remote's %s: %v", p.flavor, istiodNamespace, err)
		}
	}
	return nil
}

// checkPrimaryIPs fails when a primary Service holds an address of
// RemoteClusterIPs (other than the API server's own, 10.0.0.1, which
// the remote's default/kubernetes holds too).
func (c *Clusters) checkPrimaryIPs(ctx context.Context) error {
	for _, p := range c.f.planes {
		list, err := p.kube.Kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, s := range list.Items {
			a, err := netip.ParseAddr(s.Spec.ClusterIP)
			if err == nil && RemoteClusterIPs.Contains(a) && !(s.Namespace == "default" && s.Name == "kubernetes") {
				return fmt.Errorf("%s: the primary's Service %s/%s holds %s, an address of the remote's (RemoteClusterIPs)", p.flavor, s.Namespace, s.Name, a)
			}
		}
	}
	return nil
}

// await replaces the remote sentinel (a Service without endpoints in
// remoteSentinelNamespace of both remotes) by a new one and waits until
// both control planes send its cluster to the probe proxy: they read the
// remote as it is now. With present false, it waits until the last one
// is gone from both (the remote dropped).
func (c *Clusters) await(t *testing.T, present bool) {
	t.Helper()
	if err := c.awaitRemote(present); err != nil {
		t.Fatalf("reading the remote cluster: %v", err)
	}
}

func (c *Clusters) awaitRemote(present bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout+10*time.Second)
	defer cancel()
	if present {
		if c.sentinel >= 4 {
			return fmt.Errorf("a Multicluster has 4 remote sentinels at most")
		}
		prev := c.sentinel
		c.sentinel++
		objs, err := parseObjects(remoteSentinel(c.sentinel))
		if err != nil {
			return err
		}
		for _, w := range c.remote {
			if prev > 0 {
				err := w.p.kube.Kube.CoreV1().Services(remoteSentinelNamespace).Delete(ctx, remoteSentinelName(prev), metav1.DeleteOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("%s: remote: %v", w.p.flavor, err)
				}
			}
			if err := w.apply(ctx, objs, false); err != nil {
				return fmt.Errorf("%s: remote sentinel: %v", w.p.flavor, err)
			}
		}
	}
	if c.sentinel == 0 {
		return nil
	}
	cluster := fmt.Sprintf("outbound|%d||%s.%s.svc.cluster.local", remoteSentinelPort, remoteSentinelName(c.sentinel), remoteSentinelNamespace)
	probe, err := probeProxy.resolve(nil)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	var errs [2]error
	for i, p := range c.f.planes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(caseTimeout)
			for {
				s, err := p.snapshot(ctx, probe)
				if err == nil {
					if _, ok := s["cds"][cluster]; ok == present {
						return
					}
				}
				if time.Now().After(deadline) {
					if err == nil {
						err = fmt.Errorf("the remote sentinel %s present: %v, never %v", cluster, !present, present)
					}
					errs[i] = fmt.Errorf("%s: %v", p.flavor, err)
					return
				}
				select {
				case <-ctx.Done():
					errs[i] = ctx.Err()
					return
				case <-time.After(pollEvery):
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs[0], errs[1])
}

func remoteSentinelName(n int) string { return fmt.Sprintf("sentinel-%d", n) }

// remoteSentinel is the n-th remote sentinel, at 10.0.0.(1+n).
func remoteSentinel(n int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %s, namespace: %s}
spec:
  clusterIP: 10.0.0.%d
  ports: [{name: tcp-sentinel, port: %d}]
`, remoteSentinelName(n), remoteSentinelNamespace, 1+n, remoteSentinelPort)
}

// cleanup deletes the secret and waits until both control planes
// dropped the remote, then removes the network labels and the remote's
// objects.
func (c *Clusters) cleanup(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if c.secret {
		if err := c.deleteSecret(ctx); err != nil {
			t.Error(err)
		}
		if err := c.awaitRemote(false); err != nil {
			t.Errorf("dropping the remote cluster: %v", err)
		}
	}
	if err := c.label(ctx, "", ""); err != nil {
		t.Error(err)
	}
	for _, w := range c.remote {
		if err := w.cleanup(ctx); err != nil {
			t.Errorf("%s: cleaning up the remote: %v", w.p.flavor, err)
		}
	}
}
