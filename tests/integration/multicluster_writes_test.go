package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/pkg/kube/leaderelection"
	"github.com/meshplane/istiod/tests/kube"
)

func withExternalIstiod() option {
	return func(a *bootstrap.PilotArgs) { a.Multicluster.ExternalIstiod = true }
}

func withPodName(n string) option { return func(a *bootstrap.PilotArgs) { a.PodName = n } }

// What istiod writes in a remote cluster, as Istio 1.31: nothing without
// EXTERNAL_ISTIOD, nothing when the remote's istiod namespace does not
// name the local cluster in topology.istio.io/controlPlaneClusters; with
// both, istio-ca-root-cert in the remote's namespaces that the mesh's
// discoverySelectors select by the remote's own labels (and in new ones),
// the namespace controller's ConfigMap lock held as a remote candidate,
// the injection webhook's caBundle patched; deleting the remote secret
// ends every goroutine istiod ran for the cluster and releases the lock.
func TestRemoteClusterWrites(t *testing.T) {
	local := kube.Shared(t)
	remote := kube.Start(t)
	ctx := context.Background()
	rk := remote.Kube

	meshFile := filepath.Join(t.TempDir(), "mesh.yaml")
	writeFile(t, meshFile, "discoverySelectors:\n- matchLabels: {team: mesh}\n")
	selected := map[string]string{"team": "mesh"}

	// the remote's namespaces: one selected by its labels; one whose
	// namespace of the same name in the local cluster is selected, but
	// not the remote's
	app := local.NewNamespace(t, nil).Name
	remote.CreateNamespace(t, app, selected)
	hidden := local.NewNamespace(t, selected).Name
	remote.CreateNamespace(t, hidden, nil)
	// the injection webhook, as the remote chart installs it
	none := &metav1.LabelSelector{MatchLabels: map[string]string{"never": "matches"}}
	ignore, sideEffects := admissionv1.Ignore, admissionv1.SideEffectClassNone
	hook := func(name string) admissionv1.MutatingWebhook {
		return admissionv1.MutatingWebhook{Name: name, NamespaceSelector: none, FailurePolicy: &ignore, SideEffects: &sideEffects,
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig:            admissionv1.WebhookClientConfig{URL: ptrTo("https://127.0.0.1:1/inject")}}
	}
	mwc := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "istio-sidecar-injector",
		Labels: map[string]string{"istio.io/rev": "default"}},
		Webhooks: []admissionv1.MutatingWebhook{hook("rev.namespace.sidecar-injector.istio.io"), hook("other.example.com")}}
	if _, err := rk.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// istiod's namespace in the remote, with the annotation
	remoteSystem := func(name, controlPlanes string) {
		t.Helper()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{bootstrap.ControlPlaneClustersAnnotation: controlPlanes}}}
		if _, err := rk.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	addRemote := func(d *istiod, sys string) {
		t.Helper()
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "istio-remote-secret-cluster2", Namespace: sys,
			Labels: map[string]string{"istio/multiCluster": "true"}},
			Data: map[string][]byte{"cluster2": embeddedKubeconfig(t, remote.RESTConfig, "cluster2")}}
		if _, err := local.Kube.CoreV1().Secrets(sys).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "cluster2 synced", func() (bool, string) {
			_, body := d.get("/debug/clusterz")
			var got []struct{ ID, SecretName, SyncStatus string }
			_ = json.Unmarshal(body, &got)
			for _, c := range got {
				if c.ID == "cluster2" && c.SecretName == sys+"/istio-remote-secret-cluster2" && c.SyncStatus == "synced" {
					return true, ""
				}
			}
			return false, string(body)
		})
	}
	rootIn := func(ns string) (string, bool) {
		cm, err := rk.CoreV1().ConfigMaps(ns).Get(ctx, "istio-ca-root-cert", metav1.GetOptions{})
		if err != nil {
			return err.Error(), false
		}
		return cm.Data["root-cert.pem"], true
	}
	injectionBundle := func() (inj, other []byte) {
		got, err := rk.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, mwc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Webhooks[0].ClientConfig.CABundle, got.Webhooks[1].ClientConfig.CABundle
	}
	nothingWritten := func(what string, systems ...string) {
		t.Helper()
		for _, ns := range append([]string{app, hidden}, systems...) {
			if v, ok := rootIn(ns); ok {
				t.Errorf("%s: istio-ca-root-cert in the remote's %s: %q", what, ns, v)
			}
		}
		for _, ns := range systems {
			if _, err := rk.CoreV1().ConfigMaps(ns).Get(ctx, leaderelection.NamespaceController, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("%s: election lock in the remote's %s (%v)", what, ns, err)
			}
		}
		if inj, _ := injectionBundle(); len(inj) != 0 {
			t.Errorf("%s: the remote's injection webhook was patched", what)
		}
	}

	// without EXTERNAL_ISTIOD: nothing, although the remote names us
	sysA := local.NewNamespace(t, nil).Name
	remoteSystem(sysA, "Kubernetes")
	podA := "istiod-writes-a-" + sysA
	dA := startIstiod(t, local, sysA, withMeshFile(meshFile), withPodName(podA))
	addRemote(dA, sysA)
	if n, stacks := remoteWriterGoroutines(podA + "/cluster2"); n != 0 {
		t.Fatalf("without EXTERNAL_ISTIOD, %d goroutines write in the remote:\n%s", n, stacks)
	}

	// EXTERNAL_ISTIOD, but the remote names other clusters (entries are
	// compared exactly: " Kubernetes" is not "Kubernetes")
	sysB := local.NewNamespace(t, nil).Name
	remoteSystem(sysB, "cluster-a, Kubernetes")
	podB := "istiod-writes-b-" + sysB
	dB := startIstiod(t, local, sysB, withMeshFile(meshFile), withPodName(podB), withExternalIstiod())
	addRemote(dB, sysB)
	// it read the namespace and decided: nothing of it runs for the cluster
	eventually(t, "the decision not to lead", func() (bool, string) {
		n, stacks := remoteWriterGoroutines(podB + "/cluster2")
		return n == 0, stacks
	})
	nothingWritten("not named by the remote", sysA, sysB)

	// EXTERNAL_ISTIOD and named: it writes
	sysC := local.NewNamespace(t, nil).Name
	remoteSystem(sysC, "elsewhere,Kubernetes")
	podC := "istiod-writes-c-" + sysC
	dC := startIstiod(t, local, sysC, withMeshFile(meshFile), withPodName(podC), withExternalIstiod())
	root := string(dC.srv.CA().RootCertPEM())
	addRemote(dC, sysC)
	eventually(t, "istio-ca-root-cert in the remote's selected namespace", func() (bool, string) {
		v, ok := rootIn(app)
		return ok && v == root, v
	})
	eventually(t, "the election lock in the remote", func() (bool, string) {
		cm, err := rk.CoreV1().ConfigMaps(sysC).Get(ctx, leaderelection.NamespaceController, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var r leaderelection.Record
		_ = json.Unmarshal([]byte(cm.Annotations[leaderelection.RecordAnnotation]), &r)
		return r.HolderIdentity == podC && r.HolderKey == "^default", fmt.Sprintf("%+v", r)
	})
	eventually(t, "the remote's injection webhook patched", func() (bool, string) {
		inj, other := injectionBundle()
		return string(inj) == root && len(other) == 0, fmt.Sprintf("injection %d bytes, other %d bytes", len(inj), len(other))
	})
	// a new selected namespace gets it; a namespace the remote's labels do
	// not select gets it once they do
	later := local.NewNamespace(t, nil).Name
	remote.CreateNamespace(t, later, selected)
	eventually(t, "istio-ca-root-cert in a new namespace", func() (bool, string) {
		v, ok := rootIn(later)
		return ok && v == root, v
	})
	if v, ok := rootIn(hidden); ok {
		t.Fatalf("a namespace the remote's labels do not select got the root: %q", v)
	}
	// the remote's services are filtered by the remote's labels too
	for _, ns := range []string{app, hidden} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: ns},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
		if _, err := rk.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the remote's selected service", func() (bool, string) {
		return dC.service("svc."+app+".svc.cluster.local") != nil, "missing"
	})
	if dC.service("svc."+hidden+".svc.cluster.local") != nil {
		t.Fatal("a service of a namespace the remote's labels do not select is in the registry")
	}
	n, err := rk.CoreV1().Namespaces().Get(ctx, hidden, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels = selected
	if _, err := rk.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "istio-ca-root-cert once the namespace is selected", func() (bool, string) {
		v, ok := rootIn(hidden)
		return ok && v == root, v
	})
	eventually(t, "the service once its namespace is selected", func() (bool, string) {
		return dC.service("svc."+hidden+".svc.cluster.local") != nil, "missing"
	})

	// the secret deleted: every goroutine run for the cluster ends, the
	// lock is released
	if n, stacks := remoteWriterGoroutines(podC + "/cluster2"); n == 0 {
		t.Fatalf("no goroutine carries the remote writer label:\n%s", stacks)
	}
	if err := local.Kube.CoreV1().Secrets(sysC).Delete(ctx, "istio-remote-secret-cluster2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the remote writers' goroutines gone", func() (bool, string) {
		n, stacks := remoteWriterGoroutines(podC + "/cluster2")
		return n == 0, stacks
	})
	eventually(t, "the lock released", func() (bool, string) {
		cm, err := rk.CoreV1().ConfigMaps(sysC).Get(ctx, leaderelection.NamespaceController, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var r leaderelection.Record
		_ = json.Unmarshal([]byte(cm.Annotations[leaderelection.RecordAnnotation]), &r)
		return r.HolderIdentity == "", fmt.Sprintf("%+v", r)
	})
	gone := local.NewNamespace(t, nil).Name
	remote.CreateNamespace(t, gone, selected)
	// a namespace later gets nothing: nothing runs that could write it
	// (the goroutines are gone), so reading it once is enough
	if v, ok := rootIn(gone); ok {
		t.Fatalf("a namespace created after the secret was deleted got the root: %q", v)
	}
}

// remoteWriterGoroutines counts the goroutines labelled id by istiod's
// remote writers, leaving out those of the remote client's connection
// pool (HTTP keep-alive connections a request of a writer opened, owned
// by the client, which closes them when idle).
func remoteWriterGoroutines(id string) (int, string) {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	label := `"` + bootstrap.RemoteWriterLabel + `":"` + id + `"`
	total := 0
	var stacks []string
	for _, rec := range strings.Split(b.String(), "\n\n") {
		if !strings.Contains(rec, label) || connectionPool(rec) {
			continue
		}
		f := strings.Fields(rec)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.Atoi(f[0])
		total += n
		stacks = append(stacks, rec)
	}
	return total, strings.Join(stacks, "\n\n")
}

func connectionPool(stack string) bool {
	for _, s := range []string{"net/http.(*persistConn)", "golang.org/x/net/http2.(*clientConnReadLoop)", "golang.org/x/net/http2.(*ClientConn)",
		"net/http.(*http2clientConnReadLoop)", "net/http.(*http2ClientConn)"} {
		if strings.Contains(stack, s) {
			return true
		}
	}
	return false
}

// PILOT_MULTICLUSTER_KUBECONFIG_PATH: a remote cluster from a kubeconfig
// file (its current context's cluster naming it), its services joined;
// the file removed, the cluster goes.
func TestRemoteClusterFromKubeconfigFile(t *testing.T) {
	local := kube.Shared(t)
	remote := kube.Start(t)
	ctx := context.Background()
	sys := local.NewNamespace(t, nil).Name
	ns := local.NewNamespace(t, nil).Name
	remote.CreateNamespace(t, ns, nil)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "from-file", Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if _, err := remote.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d := startIstiod(t, local, sys, func(a *bootstrap.PilotArgs) { a.Multicluster.KubeconfigPath = dir })
	host := "from-file." + ns + ".svc.cluster.local"
	if d.service(host) != nil {
		t.Fatal("the remote service before its kubeconfig")
	}
	writeFile(t, filepath.Join(dir, "east.yaml"), string(embeddedKubeconfig(t, remote.RESTConfig, "cluster-east")))
	eventually(t, "the cluster from the file", func() (bool, string) {
		_, body := d.get("/debug/clusterz")
		var got []struct{ ID, SecretName, SyncStatus string }
		_ = json.Unmarshal(body, &got)
		for _, c := range got {
			if c.ID == "cluster-east" && c.SecretName == "/cluster-east" && c.SyncStatus == "synced" {
				return true, ""
			}
		}
		return false, string(body)
	})
	eventually(t, "the remote service", func() (bool, string) { return d.service(host) != nil, "missing" })
	if err := os.Remove(filepath.Join(dir, "east.yaml")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the remote service gone", func() (bool, string) { return d.service(host) == nil, "still there" })
}
