package deployment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/kube/inject"
	"github.com/meshplane/istiod/tests/golden"
	"github.com/meshplane/istiod/tests/refdata"
)

// waypointGateway is Gateway travel/booking-waypoint of the ambient
// reference's input as the API server stored it (uid, kubectl's
// annotation).
func waypointGateway(t testing.TB, dir string) *gatewayv1.Gateway {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "input", "istio.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var gw gatewayv1.Gateway
	doc := regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1)[0]
	if err := yaml.Unmarshal([]byte(doc), &gw); err != nil {
		t.Fatal(err)
	}
	if gw.Name != "booking-waypoint" {
		t.Fatalf("first object of istio.yaml is %q, want the waypoint Gateway", gw.Name)
	}
	gw.UID = types.UID("83d78446-f6cf-4e7c-8aec-fa55f0eede46")
	gw.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"gateway.networking.k8s.io/v1"}`}
	return &gw
}

func waypointSource(t testing.TB) (Source, Environment) {
	m := mesh.DefaultMeshConfig()
	gw := waypointGateway(t, refdata.Dir(t, "ambient"))
	return Source{
			Gateway: gw, Controller: gateway.MeshControllerName, Config: loadInjector(t, refdata.Dir(t, "gateways")), Mesh: m,
			ProxyConfig: inject.EffectiveProxyConfig(m, nil, gw.Namespace, map[string]string{LabelGatewayName: gw.Name}, nil),
		}, Environment{ClusterID: "Kubernetes", KubeVersion: 137, NativeSidecars: true,
			CopyLabelsAnnotations: true, Ambient: true}
}

// TestReferenceWaypointRender renders the injector's waypoint template for
// the ambient reference's waypoint and compares the Deployment with the one
// Istio applied (ambient/real/generated.json) field by field, both ways.
// Istio generated no ServiceAccount and no Service there: both existed
// before, without gateway.istio.io/managed, so it left them alone (as the
// controller does: TestSkipsUnmanagedObjects); their rendering is checked
// against the template.
func TestReferenceWaypointRender(t *testing.T) {
	dir := refdata.Dir(t, "ambient")
	src, env := waypointSource(t)
	objs, err := Render(src, env, WaypointTemplateName, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byKey := map[string]*Object{}
	for _, o := range objs {
		names = append(names, o.Kind()+"/"+o.Name)
		byKey[o.Kind()+"/"+o.Name] = o
	}
	if strings.Join(names, ",") != "ServiceAccount/booking-waypoint,Deployment/booking-waypoint,Service/booking-waypoint" {
		t.Fatalf("rendered %v, want ServiceAccount, Deployment and Service booking-waypoint", names)
	}

	b, err := os.ReadFile(filepath.Join(dir, "real", "generated.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Items []map[string]any }
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, ref := range list.Items {
		meta := ref["metadata"].(map[string]any)
		key := ref["kind"].(string) + "/" + meta["name"].(string)
		o, ok := byKey[key]
		if !ok {
			t.Errorf("Istio generated %s, we did not render it", key)
			continue
		}
		compared++
		got := strip(dropNulls(generic(t, o.want)), []string{"status"})
		// the waypoint template sets no pod securityContext: the API
		// server's defaulting makes it {}
		want := strip(strip(any(ref), serverFilled), append(slices.Clone(apiDefaults), "spec.template.spec.securityContext"))
		if d := golden.Diff(key, got, want); len(d) > 0 {
			t.Errorf("%s differs from Istio's:\n%s", key, strings.Join(d, "\n"))
		}
	}
	if compared == 0 {
		t.Fatal("the reference lists no generated object")
	}

	svc := generic(t, byKey["Service/booking-waypoint"].want).(map[string]any)
	wantSvc := map[string]any{
		"metadata": map[string]any{
			"name": "booking-waypoint", "namespace": "travel",
			"labels": map[string]any{
				"gateway.istio.io/managed":                     "istio.io-mesh-controller",
				"gateway.networking.k8s.io/gateway-class-name": "istio-waypoint",
				"gateway.networking.k8s.io/gateway-name":       "booking-waypoint",
				"istio.io/waypoint-for":                        "service",
			},
			"annotations": map[string]any{"networking.istio.io/traffic-distribution": "PreferClose"},
			"ownerReferences": []any{map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
				"name": "booking-waypoint", "uid": "83d78446-f6cf-4e7c-8aec-fa55f0eede46"}},
		},
		"spec": map[string]any{
			"ipFamilyPolicy": "PreferDualStack",
			"ports": []any{
				map[string]any{"name": "status-port", "port": float64(15021), "protocol": "TCP", "appProtocol": "tcp"},
				map[string]any{"name": "mesh", "port": float64(15008), "protocol": "TCP", "appProtocol": "hbone"},
			},
			"selector": map[string]any{"gateway.networking.k8s.io/gateway-name": "booking-waypoint"},
			"type":     "ClusterIP",
		},
	}
	if d := golden.Diff("Service", strip(svc, []string{"apiVersion", "kind"}), wantSvc); len(d) > 0 {
		t.Errorf("waypoint Service differs from the template's:\n%s", strings.Join(d, "\n"))
	}
	sa := generic(t, byKey["ServiceAccount/booking-waypoint"].want).(map[string]any)
	labels := sa["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["gateway.istio.io/managed"] != "istio.io-mesh-controller" || labels["istio.io/waypoint-for"] != "service" {
		t.Errorf("waypoint ServiceAccount labels %v", labels)
	}
	if _, ok := labels["istio.io/dataplane-mode"]; ok {
		t.Errorf("waypoint ServiceAccount labeled istio.io/dataplane-mode: Istio does not label a waypoint's objects")
	}
}

// TestWaypointInput checks the template input Istio builds for a waypoint:
// names without the class suffix, a ClusterIP Service, no
// istio.io/dataplane-mode label, the mesh network label, and no deployment
// of the mesh controller's Gateways outside ambient mode.
func TestWaypointInput(t *testing.T) {
	src, env := waypointSource(t)
	in := NewTemplateInput(src, env)
	if in.DeploymentName != "booking-waypoint" || in.ServiceAccount != "booking-waypoint" {
		t.Errorf("names %q/%q, want booking-waypoint", in.DeploymentName, in.ServiceAccount)
	}
	if in.ServiceType != "ClusterIP" {
		t.Errorf("service type %q, want ClusterIP", in.ServiceType)
	}
	if in.ControllerLabel != "istio.io-mesh-controller" {
		t.Errorf("controller label %q", in.ControllerLabel)
	}
	if _, ok := in.InfrastructureLabels[labelDataplaneMode]; ok {
		t.Errorf("waypoint input labeled %s", labelDataplaneMode)
	}
	if got := in.Ports; len(got) != 2 || got[1].Name != "mesh" || got[1].Port != 15008 || *got[1].AppProtocol != "hbone" {
		t.Errorf("ports %+v, want status-port and mesh 15008 (hbone)", got)
	}

	// a network in the injector's values labels a waypoint, not a gateway
	values := map[string]any{}
	for k, v := range src.Config.Values {
		values[k] = v
	}
	global := map[string]any{}
	if g, ok := values["global"].(map[string]any); ok {
		for k, v := range g {
			global[k] = v
		}
	}
	global["network"] = "net-a"
	values["global"] = global
	cfg := *src.Config
	cfg.Values = values
	src.Config = &cfg
	if got := NewTemplateInput(src, env).InfrastructureLabels[labelNetwork]; got != "net-a" {
		t.Errorf("waypoint network label %q, want net-a", got)
	}
	gw := *src.Gateway
	gw.Spec.GatewayClassName = "istio"
	src.Gateway, src.Controller = &gw, gateway.ControllerName
	in = NewTemplateInput(src, env)
	if _, ok := in.InfrastructureLabels[labelNetwork]; ok {
		t.Errorf("gateway of class istio labeled %s", labelNetwork)
	}
	if in.InfrastructureLabels[labelDataplaneMode] != "none" || in.DeploymentName != "booking-waypoint-istio" {
		t.Errorf("class istio in ambient mode: labels %v, name %q", in.InfrastructureLabels, in.DeploymentName)
	}

	if _, ok := deployable(gateway.MeshControllerName, Environment{}); ok {
		t.Error("waypoints deployed outside ambient mode")
	}
	if s, ok := deployable(gateway.MeshControllerName, env); !ok || s.template != WaypointTemplateName {
		t.Errorf("waypoint settings %+v, %v", s, ok)
	}
}

// TestWaypointTemplateMissing: an injection configuration without the
// waypoint template renders nothing, with Istio's error.
func TestWaypointTemplateMissing(t *testing.T) {
	src, env := waypointSource(t)
	cfg := *src.Config
	cfg.Templates = map[string]*template.Template{}
	for k, v := range src.Config.Templates {
		if k != WaypointTemplateName {
			cfg.Templates[k] = v
		}
	}
	src.Config = &cfg
	objs, err := Render(src, env, WaypointTemplateName, nil)
	if err == nil || err.Error() != `no "waypoint" template defined` || objs != nil {
		t.Errorf("Render = %v, %v; want Istio's missing template error", objs, err)
	}
}
