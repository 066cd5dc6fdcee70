package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	clientnetworking "istio.io/client-go/pkg/apis/networking/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/pkg/kube/leaderelection"
	testkube "github.com/meshplane/istiod/tests/kube"
)

// ENABLE_LEADER_ELECTION=false: the leader-elected controllers run (the
// namespace controller writes istio-ca-root-cert, the IP autoallocate
// controller addresses a ServiceEntry) and no lock is created: neither a
// Lease nor a ConfigMap lock in istiod's namespace.
func TestLeaderElectionDisabled(t *testing.T) {
	env := testkube.Shared(t)
	sys := env.NewNamespace(t, nil).Name
	ns := env.NewNamespace(t, nil).Name
	ctx := context.Background()
	startIstiod(t, env, sys, func(a *bootstrap.PilotArgs) { a.Security.LeaderElection.Disabled = true })

	publishedRoot(t, env, ns)
	ses := env.Istio.NetworkingV1().ServiceEntries(ns)
	se := &clientnetworking.ServiceEntry{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: networking.ServiceEntry{Hosts: []string{"db.example.com"},
			Ports:      []*networking.ServicePort{{Number: 5432, Name: "tcp", Protocol: "TCP"}},
			Resolution: networking.ServiceEntry_DNS, Location: networking.ServiceEntry_MESH_EXTERNAL}}
	if _, err := ses.Create(ctx, se, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ServiceEntry's addresses allocated", func() (bool, string) {
		got, err := ses.Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(got.Status.GetAddresses()) == 2, fmt.Sprint(got.Status.GetAddresses())
	})

	leases, err := env.Kube.CoordinationV1().Leases(sys).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		t.Errorf("Lease %s created with the election disabled", l.Name)
	}
	cms, err := env.Kube.CoreV1().ConfigMaps(sys).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if _, ok := cm.Annotations[leaderelection.RecordAnnotation]; ok {
			t.Errorf("ConfigMap lock %s created with the election disabled", cm.Name)
		}
	}
}

// inClusterOf is what kubelet gives a pod of env: the API server's host
// and port, and a service account token (bound to cluster-admin) and the
// CA in files.
func inClusterOf(t *testing.T, env *testkube.Env, ns string) kube.InCluster {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "istiod", Namespace: ns}}
	if _, err := env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "istiod-" + ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "istiod", Namespace: ns}}}
	if _, err := env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})
	exp := int64(3600)
	tr, err := env.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "istiod",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	token, ca := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	caData := env.RESTConfig.CAData
	if len(caData) == 0 {
		if caData, err = os.ReadFile(env.RESTConfig.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(token, []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, caData, 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(env.RESTConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	return kube.InCluster{Host: host, Port: port, TokenFile: token, CAFile: ca}
}

// LOCAL_CLUSTER_SECRET_WATCHER with EXTERNAL_ISTIOD: istiod's
// --kubeconfig is the config cluster, it runs in another cluster, and the
// remote secrets are read there (its in-cluster config: a service
// account token and CA, as kubelet mounts them), not in the config
// cluster: a secret of the cluster istiod runs in adds its cluster (whose
// services reach the sidecar), one of the config cluster is ignored, and
// deleting the former removes its cluster.
func TestRemoteSecretsOfTheClusterIstiodRunsIn(t *testing.T) {
	config := testkube.Shared(t)
	external := testkube.Start(t)
	sys := config.NewNamespace(t, nil).Name
	ns := config.NewNamespace(t, nil).Name
	external.CreateNamespace(t, sys, nil)
	external.CreateNamespace(t, ns, nil)
	ctx := context.Background()
	in := inClusterOf(t, external, sys)

	runningPod(t, external, ns, "ext-pod", "10.83.0.1", "default", map[string]string{"app": "ext"})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "ext"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := external.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := external.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, endpointSlice(ns, "ext-abc", "ext", map[string]string{"10.83.0.1": "ext-pod"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret := func(id string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "istio-remote-secret-" + id, Namespace: sys,
			Labels: map[string]string{"istio/multiCluster": "true"}},
			Data: map[string][]byte{id: embeddedKubeconfig(t, external.RESTConfig, id)}}
	}
	if _, err := external.Kube.CoreV1().Secrets(sys).Create(ctx, secret("cluster2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Kube.CoreV1().Secrets(sys).Create(ctx, secret("cluster3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	d := startIstiod(t, config, sys, func(a *bootstrap.PilotArgs) {
		a.Multicluster.ExternalIstiod = true
		a.Multicluster.LocalClusterSecretWatcher = true
		a.Multicluster.InCluster = in
	})
	clusterz := func(what string, want []struct{ ID, SecretName, SyncStatus string }) {
		t.Helper()
		eventually(t, what, func() (bool, string) {
			_, body := d.get("/debug/clusterz")
			var got []struct{ ID, SecretName, SyncStatus string }
			_ = json.Unmarshal(body, &got)
			return fmt.Sprint(got) == fmt.Sprint(want), string(body)
		})
	}
	clusterz("the secret of the cluster istiod runs in read, not the config cluster's", []struct{ ID, SecretName, SyncStatus string }{
		{"Kubernetes", "", "synced"}, {"cluster2", sys + "/istio-remote-secret-cluster2", "synced"}})
	proxy := adsc.Config{NodeID: "sidecar~10.81.0.9~client." + ns + "~" + ns + ".svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": ns, "CLUSTER_ID": "Kubernetes", "ISTIO_VERSION": "1.31.0"}}
	eventually(t, "the remote cluster's service at the sidecar", func() (bool, string) {
		snap, err := adsc.Fetch(ctx, d.srv.GRPCAddr(), proxy)
		if err != nil {
			return false, err.Error()
		}
		_, ok := snap["cds"]["outbound|80||ext."+ns+".svc.cluster.local"]
		return ok, fmt.Sprint(len(snap["cds"]), " clusters")
	})

	if err := external.Kube.CoreV1().Secrets(sys).Delete(ctx, "istio-remote-secret-cluster2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clusterz("the cluster of the deleted secret removed", []struct{ ID, SecretName, SyncStatus string }{{"Kubernetes", "", "synced"}})
}
