package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/tests/kube"
)

// A remote cluster from a remote secret, as `istioctl create-remote-secret`
// writes one: a Service in both clusters has the endpoints of both, a
// Service of the remote cluster alone reaches the sidecar; rotated
// credentials keep the remote endpoints; a kubeconfig that cannot be used
// is on /debug/warningz; deleting the secret takes the remote cluster's
// services and endpoints out of the sidecar's config.
func TestRemoteClusterFromSecret(t *testing.T) {
	local := kube.Shared(t)
	remote := kube.Start(t)
	sys := local.NewNamespace(t, nil).Name
	ns := local.NewNamespace(t, nil).Name
	remote.CreateNamespace(t, ns, nil)
	ctx := context.Background()

	var serviceIn func(env *kube.Env, ns, name, ip string)
	service := func(env *kube.Env, name, ip string) { serviceIn(env, ns, name, ip) }
	serviceIn = func(env *kube.Env, ns, name, ip string) {
		t.Helper()
		runningPod(t, env, ns, name+"-pod", ip, "default", map[string]string{"app": name})
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		if _, err := env.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		es := endpointSlice(ns, name+"-abc", name, map[string]string{ip: name + "-pod"})
		if _, err := env.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, es, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	service(local, "both", "10.81.0.1")
	service(remote, "both", "10.82.0.1")
	service(remote, "remote-only", "10.82.0.2")
	// a service of kube-system in both: cluster-local by default
	system := "sys-" + ns
	serviceIn(local, "kube-system", system, "10.81.0.3")
	serviceIn(remote, "kube-system", system, "10.82.0.3")
	t.Cleanup(func() {
		for _, env := range []*kube.Env{local, remote} {
			_ = env.Kube.CoreV1().Services("kube-system").Delete(ctx, system, metav1.DeleteOptions{})
			_ = env.Kube.CoreV1().Pods("kube-system").Delete(ctx, system+"-pod", metav1.DeleteOptions{})
			_ = env.Kube.DiscoveryV1().EndpointSlices("kube-system").Delete(ctx, system+"-abc", metav1.DeleteOptions{})
		}
	})

	d := startIstiod(t, local, sys)
	proxy := adsc.Config{NodeID: "sidecar~10.81.0.9~client." + ns + "~" + ns + ".svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": ns, "CLUSTER_ID": "Kubernetes", "ISTIO_VERSION": "1.31.0"}}
	both := "outbound|80||both." + ns + ".svc.cluster.local"
	remoteOnly := "outbound|80||remote-only." + ns + ".svc.cluster.local"
	clusterLocal := "outbound|80||" + system + ".kube-system.svc.cluster.local"
	endpointsAre := func(what string, want map[string][]string) {
		t.Helper()
		eventually(t, what, func() (bool, string) {
			snap, err := adsc.Fetch(ctx, d.srv.GRPCAddr(), proxy)
			if err != nil {
				return false, err.Error()
			}
			got := map[string][]string{}
			for _, name := range []string{both, remoteOnly, clusterLocal} {
				if _, ok := snap["cds"][name]; !ok {
					continue
				}
				got[name] = []string{}
				if cla, ok := snap["eds"][name].(*endpointv3.ClusterLoadAssignment); ok {
					for _, l := range cla.Endpoints {
						for _, e := range l.LbEndpoints {
							got[name] = append(got[name], e.GetEndpoint().GetAddress().GetSocketAddress().GetAddress())
						}
					}
				}
				slices.Sort(got[name])
			}
			return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("got %v, want %v", got, want)
		})
	}
	endpointsAre("the local cluster alone", map[string][]string{both: {"10.81.0.1"}, clusterLocal: {"10.81.0.3"}})

	secrets := local.Kube.CoreV1().Secrets(sys)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "istio-remote-secret-cluster2", Namespace: sys,
		Labels:      map[string]string{"istio/multiCluster": "true"},
		Annotations: map[string]string{"networking.istio.io/cluster": "cluster2"}},
		Data: map[string][]byte{"cluster2": embeddedKubeconfig(t, remote.RESTConfig, "cluster2")}}
	if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	endpointsAre("both clusters", map[string][]string{both: {"10.81.0.1", "10.82.0.1"}, remoteOnly: {"10.82.0.2"}, clusterLocal: {"10.81.0.3"}})
	eventually(t, "clusterz", func() (bool, string) {
		_, body := d.get("/debug/clusterz")
		var got []struct{ ID, SecretName, SyncStatus string }
		_ = json.Unmarshal(body, &got)
		want := fmt.Sprint([]struct{ ID, SecretName, SyncStatus string }{{"Kubernetes", "", "synced"}, {"cluster2", sys + "/istio-remote-secret-cluster2", "synced"}})
		return fmt.Sprint(got) == want, string(body)
	})

	// new credentials for the same cluster (another context name): the
	// remote endpoints stay while the new client syncs, and after
	secret.Data["cluster2"] = embeddedKubeconfig(t, remote.RESTConfig, "cluster2-rotated")
	if _, err := secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		endpointsAre("both clusters while rotating", map[string][]string{both: {"10.81.0.1", "10.82.0.1"}, remoteOnly: {"10.82.0.2"}, clusterLocal: {"10.81.0.3"}})
	}

	// a second cluster whose kubeconfig cannot be used
	bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "istio-remote-secret-cluster3", Namespace: sys,
		Labels: map[string]string{"istio/multiCluster": "true"}},
		Data: map[string][]byte{"cluster3": []byte("apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    tokenFile: /var/run/secrets/token\n")}}
	if _, err := secrets.Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the unusable kubeconfig on warningz", func() (bool, string) {
		for _, p := range d.warnings() {
			if p.Object == "Secret "+sys+"/istio-remote-secret-cluster3" && p.Field == "data.cluster3" && strings.Contains(p.Message, "cluster cluster3: kubeconfig is") {
				return true, ""
			}
		}
		return false, fmt.Sprint(d.warnings())
	})
	endpointsAre("the good cluster unaffected", map[string][]string{both: {"10.81.0.1", "10.82.0.1"}, remoteOnly: {"10.82.0.2"}, clusterLocal: {"10.81.0.3"}})

	if err := secrets.Delete(ctx, secret.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	endpointsAre("the remote cluster gone", map[string][]string{both: {"10.81.0.1"}, clusterLocal: {"10.81.0.3"}})
}

// embeddedKubeconfig is a kubeconfig holding cfg's credentials inline (a
// remote secret may not reference files), with the context named name.
func embeddedKubeconfig(t *testing.T, cfg *rest.Config, name string) []byte {
	t.Helper()
	ca := cfg.CAData
	cert, key := cfg.CertData, cfg.KeyData
	var err error
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	if len(cert) == 0 && cfg.CertFile != "" {
		if cert, err = os.ReadFile(cfg.CertFile); err != nil {
			t.Fatal(err)
		}
		if key, err = os.ReadFile(cfg.KeyFile); err != nil {
			t.Fatal(err)
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cert, ClientKeyData: key}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
