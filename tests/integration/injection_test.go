package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/tests/helmbin"
	"github.com/meshplane/istiod/tests/injecttest"
	"github.com/meshplane/istiod/tests/kube"
)

// refNamespace is the namespace of the reference pods: the pods are created
// there so that they can be compared with Istio's field by field.
const refNamespace = "bookinfo"

// injectionSetup renders Istio 1.31's istio-discovery chart with helm,
// applies its ConfigMaps (mesh and injector) into istiod's namespace and its
// MutatingWebhookConfiguration with the webhooks' clientConfig pointed at
// istiod's /inject on loopback, limited to namespace podNS (the API server
// is shared), and starts istiod. The caBundle is left to istiod's patcher,
// which selects the configuration by its istio.io/rev label as Istio does.
func injectionSetup(t *testing.T, env *kube.Env, podNS string, cms ...func(*corev1.ConfigMap)) (*istiod, string) {
	t.Helper()
	ns := env.NewNamespace(t, nil).Name
	objs := helmbin.IstioDiscovery(t, "istio-system")
	ctx := context.Background()
	var mwc *admissionregistrationv1.MutatingWebhookConfiguration
	for _, o := range objs {
		switch {
		case o.GetKind() == "ConfigMap" && (o.GetName() == "istio" || o.GetName() == "istio-sidecar-injector"):
			cm := &corev1.ConfigMap{}
			fromUnstructured(t, o, cm)
			cm.Namespace = ns
			for _, f := range cms {
				f(cm)
			}
			if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case o.GetKind() == "MutatingWebhookConfiguration":
			mwc = &admissionregistrationv1.MutatingWebhookConfiguration{}
			fromUnstructured(t, o, mwc)
		}
	}
	if mwc == nil {
		t.Fatal("the chart has no MutatingWebhookConfiguration")
	}
	d := startIstiod(t, env, ns, withWebhook)
	url := "https://" + d.srv.HTTPSAddr() + "/inject"
	mwc.Name = "istio-sidecar-injector-" + ns
	for i := range mwc.Webhooks {
		w := &mwc.Webhooks[i]
		w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
		if w.NamespaceSelector == nil {
			w.NamespaceSelector = &metav1.LabelSelector{}
		}
		w.NamespaceSelector.MatchExpressions = append(w.NamespaceSelector.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{podNS}})
	}
	mwcs := env.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := mwcs.Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mwcs.Delete(context.Background(), mwc.Name, metav1.DeleteOptions{}) })
	return d, ns
}

func fromUnstructured(t *testing.T, o *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

// ensureNamespace creates a namespace of a fixed name (or reuses it) with
// labels.
func ensureNamespace(t *testing.T, env *kube.Env, name string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	nsc := env.Kube.CoreV1().Namespaces()
	ns, err := nsc.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ns, err = nsc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range labels {
		if ns.Labels[k] != v {
			ns.Labels[k] = v
			if _, err := nsc.Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// dryRunCreate creates a pod with server-side dry run: admission runs,
// nothing is stored.
func dryRunCreate(env *kube.Env, pod *corev1.Pod) (*corev1.Pod, error) {
	return env.Kube.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
}

// injected tells whether the API server's answer carries a sidecar.
func injected(p *corev1.Pod) bool {
	_, ok := p.Annotations["sidecar.istio.io/status"]
	return ok
}

// refPodAllow are the fields of an admitted pod that differ from the
// reference for reasons outside injection: the API server sets them anew
// for each dry-run create.
var refPodAllow = []string{"metadata.uid", "metadata.creationTimestamp", "metadata.resourceVersion", "metadata.managedFields"}

// Pods created through the real API server with Istio's chart applied come
// back injected exactly as Istio's istiod injected them
// (../shared/reference/injection), with no Node in the cluster (native
// sidecar) and with a v1.31.6 Node (classic sidecar, unless the pod asks).
func TestInjectionThroughTheAPIServer(t *testing.T) {
	env := kube.Shared(t)
	ref := injecttest.LoadReference(t)
	ensureNamespace(t, env, refNamespace, map[string]string{"istio-injection": "enabled"})
	d, _ := injectionSetup(t, env, refNamespace)
	ctx := context.Background()
	read := func(name string) *corev1.Pod {
		return injecttest.ReadPod(t, filepath.Join(ref.Dir, "input/pods", name+".yaml"))
	}
	compare := func(got *corev1.Pod, real string) {
		t.Helper()
		want := injecttest.ReadPod(t, filepath.Join(ref.Dir, "real/pods", real+".json"))
		// the typed client drops apiVersion and kind when it decodes
		got = got.DeepCopy()
		got.APIVersion, got.Kind = "v1", "Pod"
		if diff := injecttest.Diff(want, got, refPodAllow...); len(diff) > 0 {
			t.Errorf("%s: %d differences from Istio's pod:\n%s", real, len(diff), strings.Join(diff, "\n"))
		}
	}
	// the API server applies the configuration and istiod patches its
	// caBundle asynchronously
	var got *corev1.Pod
	eventually(t, "pods injected", func() (bool, string) {
		p, err := dryRunCreate(env, read("productpage-v1-abc"))
		if err != nil {
			return false, err.Error()
		}
		got = p
		return injected(p), "not injected"
	})
	nodes, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) == 0 {
		compare(got, "productpage-v1-abc.no-nodes")
	} else {
		t.Logf("the shared API server has %d Nodes: the no-Node case is not checked", len(nodes.Items))
	}

	addNode(t, env, "injection-node-0", "v1.31.6")
	eventually(t, "node seen", func() (bool, string) {
		p, err := dryRunCreate(env, read("productpage-v1-abc"))
		if err != nil {
			return false, err.Error()
		}
		got = p
		return len(p.Spec.Containers) == 2, "istio-proxy still a native sidecar"
	})
	compare(got, "productpage-v1-abc")
	for _, name := range []string{"details-v1-abc", "reviews-v2-abc"} {
		p, err := dryRunCreate(env, read(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		compare(p, name)
	}

	// /debug/inject lists the chart's templates
	code, body := d.get("/debug/inject")
	var templates map[string]string
	if code != 200 || json.Unmarshal(body, &templates) != nil || templates["sidecar"] == "" || templates["grpc-agent"] == "" {
		t.Errorf("/debug/inject %d: %.200s", code, body)
	}
	// the webhook is counted on /metrics
	code, metrics := webhookMetrics(d)
	for _, want := range []string{"sidecar_injection_requests_total", "sidecar_injection_success_total", "sidecar_injection_time_seconds_bucket"} {
		if code != 200 || !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics %d: no %s", code, want)
		}
	}
}

func addNode(t *testing.T, env *kube.Env, name, kubelet string) {
	t.Helper()
	ctx := context.Background()
	nc := env.Kube.CoreV1().Nodes()
	n, err := nc.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	n.Status.NodeInfo.KubeletVersion = kubelet
	if _, err := nc.UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Bad input through the API server: a pod the templates cannot inject is
// refused with the webhook's message; a broken injector ConfigMap keeps the
// last good config (pods still injected) and is listed on /debug/warningz.
func TestInjectionBadInput(t *testing.T) {
	env := kube.Shared(t)
	podNS := env.NewNamespace(t, map[string]string{"istio-injection": "enabled"}).Name
	d, istiodNS := injectionSetup(t, env, podNS)
	ctx := context.Background()
	pod := func(annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: podNS, Labels: map[string]string{"app": "a"}, Annotations: annotations},
			Spec:       corev1.PodSpec{ServiceAccountName: "sa", Containers: []corev1.Container{{Name: "app", Image: "img"}}},
		}
	}
	eventually(t, "pods injected", func() (bool, string) {
		p, err := dryRunCreate(env, pod(nil))
		if err != nil {
			return false, err.Error()
		}
		return injected(p), "not injected"
	})

	_, err := dryRunCreate(env, pod(map[string]string{"inject.istio.io/templates": "no-such-template"}))
	if err == nil || !strings.Contains(err.Error(), `admission webhook "namespace.sidecar-injector.istio.io" denied the request`) ||
		!strings.Contains(err.Error(), `requested template "no-such-template" not found`) {
		t.Errorf("a pod asking for an unknown template: %v", err)
	}
	_, err = dryRunCreate(env, pod(map[string]string{"sidecar.istio.io/proxyCPU": "lots"}))
	if err == nil || !strings.Contains(err.Error(), "invalid value 'lots' for annotation 'sidecar.istio.io/proxyCPU'") {
		t.Errorf("a pod with an invalid resource annotation: %v", err)
	}
	if p, err := dryRunCreate(env, pod(map[string]string{"sidecar.istio.io/inject": "false"})); err != nil || injected(p) {
		t.Errorf("a pod that opts out: %v, injected %v", err, err == nil && injected(p))
	}

	cms := env.Kube.CoreV1().ConfigMaps(istiodNS)
	cm, err := cms.Get(ctx, "istio-sidecar-injector", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["config"] = "templates:\n  sidecar: '{{ if }'\n"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "warningz lists the broken ConfigMap", func() (bool, string) {
		code, body := d.get("/debug/warningz")
		return code == 200 && strings.Contains(string(body), `"injection"`) &&
			strings.Contains(string(body), "keeping the last good injection config"), fmt.Sprintf("%d %s", code, body)
	})
	if p, err := dryRunCreate(env, pod(nil)); err != nil || !injected(p) {
		t.Errorf("with a broken ConfigMap the last good config must keep injecting: %v", err)
	}
	resp, err := http.Get("http://" + d.srv.HTTPAddr() + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/ready %d with a broken injector ConfigMap (a good one was read)", resp.StatusCode)
	}
}

// Without an injector ConfigMap istiod is ready, and a pod sent to /inject
// gets an admission error naming the ConfigMap.
func TestInjectionWithoutConfigMap(t *testing.T) {
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns, withWebhook, func(a *bootstrap.PilotArgs) {})
	code, _ := d.get("/debug/inject")
	if code != http.StatusNotFound {
		t.Errorf("/debug/inject %d without a ConfigMap, want 404", code)
	}
	code, body := d.get("/debug/warningz")
	if code != 200 || !strings.Contains(string(body), "the injector ConfigMap does not exist") {
		t.Errorf("/debug/warningz %d: %s", code, body)
	}
}
