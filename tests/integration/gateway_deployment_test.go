package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pkg/kube/leaderelection"
	"github.com/meshplane/istiod/tests/kube"
	"github.com/meshplane/istiod/tests/refdata"
)

// applyReferenceInjector creates the reference's istio-sidecar-injector
// ConfigMap in ns, istiod's namespace.
func applyReferenceInjector(t *testing.T, env *kube.Env, dir, ns string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "input", "istio-sidecar-injector.yaml"))
	must(t, err)
	var cm corev1.ConfigMap
	must(t, yaml.Unmarshal(b, &cm))
	cm.Namespace = ns
	_, err = env.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &cm, metav1.CreateOptions{})
	must(t, err)
}

// generatedObject reads the generated object kind/edge-istio of ns as
// generic JSON (nil when absent).
func generatedObject(t *testing.T, env *kube.Env, ns, kind string) map[string]any {
	t.Helper()
	ctx := context.Background()
	var obj any
	var err error
	switch kind {
	case "Deployment":
		obj, err = env.Kube.AppsV1().Deployments(ns).Get(ctx, "edge-istio", metav1.GetOptions{})
	case "Service":
		obj, err = env.Kube.CoreV1().Services(ns).Get(ctx, "edge-istio", metav1.GetOptions{})
	case "ServiceAccount":
		obj, err = env.Kube.CoreV1().ServiceAccounts(ns).Get(ctx, "edge-istio", metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	must(t, err)
	b, err := json.Marshal(obj)
	must(t, err)
	var out map[string]any
	must(t, json.Unmarshal(b, &out))
	out["apiVersion"], out["kind"] = "v1", kind
	if kind == "Deployment" {
		out["apiVersion"] = "apps/v1"
	}
	return out
}

// serverFilled are the fields the API server fills in for whoever writes
// an object: identity and bookkeeping, allocated addresses and node ports,
// status.
var serverFilled = map[string]bool{"uid": true, "resourceVersion": true, "creationTimestamp": true, "managedFields": true,
	"clusterIP": true, "clusterIPs": true, "nodePort": true, "status": true}

// referenceGenerated are the objects Istio generated for Gateway edge, by
// kind, with the server-filled fields dropped.
func referenceGenerated(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "real", "generated-objects.json"))
	must(t, err)
	var list struct{ Items []map[string]any }
	must(t, json.Unmarshal(b, &list))
	out := map[string]any{}
	for _, o := range list.Items {
		if o["metadata"].(map[string]any)["name"] == "edge-istio" {
			out[o["kind"].(string)] = dropServerFilled(o)
		}
	}
	return out
}

// dropServerFilled drops the server-filled fields wherever they are (the
// uid of an owner reference too: the Gateway's, checked apart).
func dropServerFilled(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if !serverFilled[k] {
				out[k] = dropServerFilled(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = dropServerFilled(e)
		}
		return out
	}
	return v
}

// TestGatewayDeploymentReference applies the reference inputs to a real API
// server: istiod, leader of Istio's deployment Lease, server-side applies
// the ServiceAccount, Deployment and Service Istio generated for Gateway
// edge, equal to Istio's field by field apart from what the API server
// fills in, owned by the Gateway; the Gateway's status is then Istio's
// (Programmed False, AddressNotAssigned: the Service has no endpoints);
// nothing is rewritten when nothing changed, and an edit is undone.
func TestGatewayDeploymentReference(t *testing.T) {
	dir := refdata.Dir(t, "gateways")
	env := kube.Shared(t)
	ns, d, created := startReferenceGateway(t, env, dir)
	ctx := context.Background()
	gwc := env.GatewayAPI.GatewayV1()

	want := referenceGenerated(t, dir)
	for _, kind := range []string{"ServiceAccount", "Deployment", "Service"} {
		eventually(t, kind+" edge-istio as Istio generated it", func() (bool, string) {
			got := generatedObject(t, env, ns, kind)
			if got == nil {
				return false, "absent"
			}
			refs, _ := got["metadata"].(map[string]any)["ownerReferences"].([]any)
			if len(refs) != 1 || refs[0].(map[string]any)["uid"] != string(created.UID) {
				return false, fmt.Sprintf("owner references %v, want the Gateway's uid %s", refs, created.UID)
			}
			diff := diffString(t, dropServerFilled(normalized(t, got, ns)), want[kind])
			return diff == "", diff
		})
	}
	eventually(t, "Gateway Programmed False AddressNotAssigned", func() (bool, string) {
		g, err := gwc.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range g.Status.Conditions {
			if c.Type == "Programmed" {
				wantMsg := fmt.Sprintf("Failed to assign to any requested addresses: no instances found for hostname %q",
					"edge-istio."+ns+".svc.cluster.local")
				return c.Status == "False" && c.Reason == "AddressNotAssigned" && c.Message == wantMsg, fmt.Sprintf("%+v", c)
			}
		}
		return false, "no Programmed condition"
	})
	lease, err := env.Kube.CoordinationV1().Leases(ns).Get(ctx,
		leaderelection.PerRevision(leaderelection.GatewayDeploymentController, ""), metav1.GetOptions{})
	must(t, err)
	if lease.Name != "istio-gateway-deployment-default" || !d.srv.IsGatewayDeploymentLeader() {
		t.Errorf("lease %s, leader %v", lease.Name, d.srv.IsGatewayDeploymentLeader())
	}
	checkNoRewriteAndRepair(t, env, ns)
}

// checkNoRewriteAndRepair: an annotation added by someone else changes
// nothing Istio owns, so nothing is written; an image replaced is put back.
func checkNoRewriteAndRepair(t *testing.T, env *kube.Env, ns string) {
	t.Helper()
	ctx := context.Background()
	deps, svcs, sas := env.Kube.AppsV1().Deployments(ns), env.Kube.CoreV1().Services(ns), env.Kube.CoreV1().ServiceAccounts(ns)
	svc, err := svcs.Get(ctx, "edge-istio", metav1.GetOptions{})
	must(t, err)
	sa, err := sas.Get(ctx, "edge-istio", metav1.GetOptions{})
	must(t, err)
	dep, err := deps.Get(ctx, "edge-istio", metav1.GetOptions{})
	must(t, err)
	if dep.Generation != 1 {
		t.Errorf("Deployment generation %d: its spec was written more than once", dep.Generation)
	}
	dep.Annotations = map[string]string{"example.com/note": "mine"}
	dep, err = deps.Update(ctx, dep, metav1.UpdateOptions{})
	must(t, err)
	// the event reaches istiod, which renders the same objects
	time.Sleep(2 * time.Second)
	for what, rv := range map[string][2]string{
		"Deployment": {dep.ResourceVersion, getRV(t, func() (metav1.Object, error) { return deps.Get(ctx, "edge-istio", metav1.GetOptions{}) })},
		"Service":    {svc.ResourceVersion, getRV(t, func() (metav1.Object, error) { return svcs.Get(ctx, "edge-istio", metav1.GetOptions{}) })},
		"ServiceAccount": {sa.ResourceVersion,
			getRV(t, func() (metav1.Object, error) { return sas.Get(ctx, "edge-istio", metav1.GetOptions{}) })},
	} {
		if rv[0] != rv[1] {
			t.Errorf("%s rewritten although unchanged (resourceVersion %s → %s)", what, rv[0], rv[1])
		}
	}
	dep, err = deps.Get(ctx, "edge-istio", metav1.GetOptions{})
	must(t, err)
	image := dep.Spec.Template.Spec.Containers[0].Image
	dep.Spec.Template.Spec.Containers[0].Image = "example.com/other:1"
	_, err = deps.Update(ctx, dep, metav1.UpdateOptions{})
	must(t, err)
	eventually(t, "the image put back", func() (bool, string) {
		d, err := deps.Get(ctx, "edge-istio", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := d.Spec.Template.Spec.Containers[0].Image
		return got == image && d.Annotations["example.com/note"] == "mine", got + " " + fmt.Sprint(d.Annotations)
	})
}

func getRV(t *testing.T, get func() (metav1.Object, error)) string {
	t.Helper()
	o, err := get()
	must(t, err)
	return o.GetResourceVersion()
}

// TestGatewayDeploymentWithoutInjector: without the injector ConfigMap
// Istio generates nothing, so the Gateway's status is Programmed False
// (its Service is not found), and warningz says why; once the ConfigMap
// exists the objects are generated and the problem goes.
func TestGatewayDeploymentWithoutInjector(t *testing.T) {
	dir := refdata.Dir(t, "gateways")
	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	ctx := context.Background()
	gwc := env.GatewayAPI.GatewayV1()
	gw, _ := referenceGatewayAPI(t, dir, ns)
	_, err := gwc.Gateways(ns).Create(ctx, gw, metav1.CreateOptions{})
	must(t, err)
	problem := func() string {
		for _, p := range d.warnings() {
			if p.Source == "gateway-deployment" && p.Object == "Gateway "+ns+"/edge" {
				return p.Message
			}
		}
		return ""
	}
	eventually(t, "the missing injector on warningz", func() (bool, string) {
		p := problem()
		return strings.Contains(p, "there is no injection configuration (ConfigMap "+ns+"/istio-sidecar-injector missing"), p
	})
	eventually(t, "Programmed False, the Service not found", func() (bool, string) {
		g, err := gwc.Gateways(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range g.Status.Conditions {
			if c.Type == "Programmed" {
				return c.Status == "False" && c.Reason == "AddressNotUsable" &&
					strings.Contains(c.Message, fmt.Sprintf("hostname %q not found", "edge-istio."+ns+".svc.cluster.local")), fmt.Sprintf("%+v", c)
			}
		}
		return false, "no Programmed condition"
	})
	if generatedObject(t, env, ns, "Deployment") != nil {
		t.Fatal("a Deployment was generated without the injector ConfigMap")
	}
	applyReferenceInjector(t, env, dir, ns)
	eventually(t, "the objects generated once the ConfigMap exists", func() (bool, string) {
		for _, k := range []string{"ServiceAccount", "Deployment", "Service"} {
			if generatedObject(t, env, ns, k) == nil {
				return false, k + " absent"
			}
		}
		return problem() == "", problem()
	})
}
