package deployment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/kube/inject"
	"github.com/meshplane/istiod/tests/golden"
	"github.com/meshplane/istiod/tests/refdata"
)

// serverFilled are the fields the API server fills in whoever writes the
// object: identity and bookkeeping, allocated addresses and ports, status.
var serverFilled = []string{
	"metadata.uid", "metadata.resourceVersion", "metadata.creationTimestamp", "metadata.generation", "metadata.managedFields",
	"spec.clusterIP", "spec.clusterIPs", "spec.ports[*].nodePort", "status",
}

// apiDefaults are the fields of the reference objects that the API
// server's defaulting sets (the template does not render them); the
// integration test applies our rendering to a real API server and compares
// without this list.
var apiDefaults = []string{
	// Deployment
	"spec.progressDeadlineSeconds", "spec.replicas", "spec.revisionHistoryLimit", "spec.strategy",
	"spec.template.spec.dnsPolicy", "spec.template.spec.restartPolicy", "spec.template.spec.schedulerName",
	"spec.template.spec.terminationGracePeriodSeconds", "spec.template.spec.serviceAccount",
	"spec.template.spec.containers[*].terminationMessagePath", "spec.template.spec.containers[*].imagePullPolicy", "spec.template.spec.containers[*].terminationMessagePolicy",
	"spec.template.spec.containers[*].env[*].valueFrom.fieldRef.apiVersion",
	"spec.template.spec.volumes[*].configMap.defaultMode", "spec.template.spec.volumes[*].downwardAPI.defaultMode",
	"spec.template.spec.volumes[*].projected.defaultMode", "spec.template.spec.volumes[*].downwardAPI.items[*].fieldRef.apiVersion",
	// the template renders volume workload-socket as "emptyDir:" (null): a
	// volume without a source, which the API server makes an emptyDir
	"spec.template.spec.volumes[0].emptyDir",
	// Service
	"spec.allocateLoadBalancerNodePorts", "spec.externalTrafficPolicy", "spec.internalTrafficPolicy", "spec.ipFamilies",
	"spec.sessionAffinity", "spec.ports[*].targetPort",
}

// loadInjector parses the reference's istio-sidecar-injector ConfigMap.
func loadInjector(t testing.TB, dir string) *inject.Config {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "input", "istio-sidecar-injector.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(b, &cm); err != nil {
		t.Fatal(err)
	}
	cfg, err := inject.ParseConfig(cm.Data["config"], cm.Data["values"])
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// referenceGateway is Gateway shop/edge of the input as the API server
// stored it (uid, kubectl's annotation).
func referenceGateway(t testing.TB, dir string) *gatewayv1.Gateway {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "input", "gatewayapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var gw gatewayv1.Gateway
	if err := yaml.Unmarshal([]byte(strings.Split(string(b), "\n---")[0]), &gw); err != nil {
		t.Fatal(err)
	}
	gw.UID = types.UID("1ab15de6-4a48-4a38-9131-869536665dd9")
	gw.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"gateway.networking.k8s.io/v1"}`}
	return &gw
}

func referenceSource(t testing.TB, dir string) (Source, Environment) {
	m := mesh.DefaultMeshConfig()
	gw := referenceGateway(t, dir)
	return Source{
			Gateway: gw, Controller: gateway.ControllerName, Config: loadInjector(t, dir), Mesh: m,
			ProxyConfig: inject.EffectiveProxyConfig(m, nil, gw.Namespace, map[string]string{LabelGatewayName: gw.Name}, nil),
		}, Environment{ClusterID: "Kubernetes", KubeVersion: 137, NativeSidecars: true,
			CopyLabelsAnnotations: true}
}

// TestReferenceRender renders the reference's kube-gateway template for
// Gateway shop/edge and compares each object with the one Istio applied
// (real/generated-objects.json), field by field, both ways: only the
// server-filled fields and the API server's defaults are left out.
func TestReferenceRender(t *testing.T) {
	dir := refdata.Dir(t, "gateways")
	src, env := referenceSource(t, dir)
	objs, err := Render(src, env, TemplateName, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := referenceObjects(t, dir)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.Kind()+"/"+o.Name)
		ref, ok := want[o.Kind()+"/"+o.Name]
		if !ok {
			t.Errorf("rendered %s/%s, which Istio did not generate", o.Kind(), o.Name)
			continue
		}
		got := dropNulls(generic(t, o.want))
		ref = strip(strip(ref, serverFilled), apiDefaults)
		got = strip(got, []string{"status"})
		if d := golden.Diff(o.Kind(), got, ref); len(d) > 0 {
			t.Errorf("%s/%s differs from Istio's:\n%s", o.Kind(), o.Name, strings.Join(d, "\n"))
		}
	}
	if strings.Join(kinds, ",") != "ServiceAccount/edge-istio,Deployment/edge-istio,Service/edge-istio" {
		t.Errorf("rendered %v, want Istio's ServiceAccount, Deployment and Service edge-istio", kinds)
	}
}

// referenceObjects are the generated objects of real/generated-objects.json
// by kind/name.
func referenceObjects(t testing.TB, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "real", "generated-objects.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Items []map[string]any }
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, o := range list.Items {
		meta := o["metadata"].(map[string]any)
		if _, generated := meta["ownerReferences"]; generated {
			out[o["kind"].(string)+"/"+meta["name"].(string)] = any(o)
		}
	}
	return out
}

func generic(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e != nil {
				out[k] = dropNulls(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = dropNulls(e)
		}
		return out
	}
	return v
}

// strip returns v without the fields of paths ("a.b[*].c", "a[0].b").
func strip(v any, paths []string) any {
	v = deepCopy(v)
	for _, p := range paths {
		removePath(v, strings.Split(p, "."))
	}
	return v
}

func deepCopy(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func removePath(v any, segs []string) {
	m, ok := v.(map[string]any)
	if !ok || len(segs) == 0 {
		return
	}
	key, index, hasIndex := strings.Cut(segs[0], "[")
	if !hasIndex {
		if len(segs) == 1 {
			delete(m, key)
			return
		}
		removePath(m[key], segs[1:])
		return
	}
	l, _ := m[key].([]any)
	index = strings.TrimSuffix(index, "]")
	for i, e := range l {
		if index != "*" && strconv.Itoa(i) != index {
			continue
		}
		if len(segs) == 1 {
			continue // removing list elements is not needed
		}
		removePath(e, segs[1:])
	}
}
