package debug_test

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
	security "istio.io/api/security/v1beta1"
	telemetry "istio.io/api/telemetry/v1alpha1"
	typeapi "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/config/memory"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/debug"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// viewDiscovery is a registry of one service, served by app-1.default.
type viewDiscovery struct{ svc *model.Service }

func (d viewDiscovery) Services() []*model.Service { return []*model.Service{d.svc} }

func (d viewDiscovery) GetService(h string) *model.Service {
	if h == d.svc.Hostname {
		return d.svc
	}
	return nil
}

func (d viewDiscovery) GetProxyServiceTargets(q *model.ProxyQuery) []model.ServiceTarget {
	if q.Namespace != "default" {
		return nil
	}
	return []model.ServiceTarget{{Service: d.svc, Port: model.ServiceInstancePort{Port: d.svc.Ports[0], TargetPort: 8080}}}
}

// viewServer is an ADS server whose push context holds a service, a
// DestinationRule, an AuthorizationPolicy and two Telemetry resources, with
// app-1.default connected.
func viewServer(t *testing.T) (*xdstest.Server, *http.ServeMux) {
	t.Helper()
	store := memory.New(collections.Pilot)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	create := func(k kind.Kind, ns, name string, age int, spec config.Spec) {
		t.Helper()
		_, err := store.Create(config.Config{Meta: config.Meta{GroupVersionKind: gvk.MustFromKind(k), Name: name, Namespace: ns,
			CreationTimestamp: t0.Add(time.Duration(age) * time.Second)}, Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
	}
	create(kind.DestinationRule, "default", "web", 0, &networking.DestinationRule{Host: "web.default.svc.cluster.local",
		Subsets: []*networking.Subset{{Name: "v1", Labels: map[string]string{"version": "v1"}}}})
	create(kind.AuthorizationPolicy, "default", "deny-all", 1, &security.AuthorizationPolicy{Action: security.AuthorizationPolicy_DENY,
		Rules: []*security.Rule{{}}})
	create(kind.Telemetry, "istio-system", "mesh", 2, &telemetry.Telemetry{AccessLogging: []*telemetry.AccessLogging{{Providers: []*telemetry.ProviderRef{{Name: "envoy"}}}}})
	create(kind.Telemetry, "default", "app", 3, &telemetry.Telemetry{Selector: &typeapi.WorkloadSelector{MatchLabels: map[string]string{"app": "web"}},
		Tracing: []*telemetry.Tracing{{RandomSamplingPercentage: nil, DisableSpanReporting: nil}}})
	svc := &model.Service{Hostname: "web.default.svc.cluster.local", Ports: model.PortList{{Name: "http", Port: 80, Protocol: "HTTP"}},
		CreationTime: t0, Attributes: model.ServiceAttributes{ServiceRegistry: model.Kubernetes, Name: "web", Namespace: "default"}}
	meshCfg := mesh.DefaultMeshConfig()
	env := model.NewEnvironment(model.EnvironmentOptions{ConfigStore: store, ServiceDiscovery: viewDiscovery{svc},
		Mesh: func() *meshconfig.MeshConfig { return meshCfg }, EndpointIndex: model.NewEndpointIndex()})
	s := xdstest.NewServer(t)
	s.DS.RegisterGenerator(xds.ClusterType, xds.GeneratorFunc(oneCluster))
	s.DS.SetPushContext(model.InitContext(env, nil, nil))
	c := xdstest.Dial(t, s, adsc.Config{Metadata: map[string]any{"NAMESPACE": "default", "LABELS": map[string]any{"app": "web"}}})
	if err := c.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, c)
	mux := http.NewServeMux()
	debug.New(debug.Options{XDS: s.DS, Store: store}).Install(mux)
	return s, mux
}

// The views of the push context in Istio's shapes: sidecarz, instancesz,
// authorizationz, telemetryz (all, and of one proxy), pushcontext.
func TestPushContextViews(t *testing.T) {
	_, mux := viewServer(t)
	get := func(path string) any {
		t.Helper()
		code, body := getBody(mux, path)
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		return decode(t, body)
	}
	sc := get("/debug/sidecarz?proxyID=app-1.default").(map[string]any)
	for _, k := range []string{"version", "name", "namespace", "outboundTrafficPolicy", "services", "egressListenerServices", "servicesByHostname", "sidecar", "destinationRules"} {
		if _, ok := sc[k]; !ok {
			t.Errorf("sidecarz lacks %s: %v", k, sc)
		}
	}
	if sc["name"] != "default-sidecar" || sc["namespace"] != "default" || sc["sidecar"] != nil {
		t.Errorf("sidecarz: %v", sc)
	}
	drs, _ := sc["destinationRules"].(map[string]any)["web.default.svc.cluster.local"].([]any)
	if len(drs) != 1 {
		t.Fatalf("sidecarz destinationRules: %v", sc["destinationRules"])
	}
	rule := drs[0].(map[string]any)
	if from := rule["from"].([]any); len(from) != 1 || from[0].(map[string]any)["Name"] != "web" ||
		rule["rule"].(map[string]any)["Spec"].(map[string]any)["host"] != "web.default.svc.cluster.local" ||
		!reflect.DeepEqual(rule["exportTo"], map[string]any{}) {
		t.Errorf("sidecarz rule: %v", rule)
	}
	if _, ok := sc["servicesByHostname"].(map[string]any)["web.default.svc.cluster.local"]; !ok {
		t.Errorf("sidecarz servicesByHostname: %v", sc["servicesByHostname"])
	}

	inst := get("/debug/instancesz").(map[string]any)
	targets, _ := inst["app-1.default"].([]any)
	if len(targets) != 1 {
		t.Fatalf("instancesz: %v", inst)
	}
	if port := targets[0].(map[string]any)["Port"].(map[string]any); port["port"] != 80.0 || port["TargetPort"] != 8080.0 {
		t.Errorf("instancesz port: %v", port)
	}

	authz := get("/debug/authorizationz").(map[string]any)["authorization_policies"].(map[string]any)
	pols, _ := authz["namespace_to_policies"].(map[string]any)["default"].([]any)
	if authz["root_namespace"] != "istio-system" || len(pols) != 1 || pols[0].(map[string]any)["spec"].(map[string]any)["action"] != "DENY" {
		t.Errorf("authorizationz: %v", authz)
	}
	pc := get("/debug/pushcontext").(map[string]any)
	if !reflect.DeepEqual(pc["AuthorizationPolicies"], get("/debug/authorizationz").(map[string]any)["authorization_policies"]) ||
		pc["NetworkGateways"] != nil {
		t.Errorf("pushcontext: %v", pc)
	}

	tel := get("/debug/telemetryz").(map[string]any)["telemetries"].(map[string]any)
	byNS, _ := tel["namespace_to_telemetries"].(map[string]any)
	if len(byNS["istio-system"].([]any)) != 1 || len(byNS["default"].([]any)) != 1 {
		t.Errorf("telemetryz: %v", tel)
	}
	pt := get("/debug/telemetryz?proxyID=app-1.default").(map[string]any)
	nn := func(v any) string {
		m, _ := v.(map[string]any)
		return m["Namespace"].(string) + "/" + m["Name"].(string)
	}
	if nn(pt["Root"]) != "istio-system/mesh" || nn(pt["Workload"]) != "default/app" || nn(pt["Proxy"]) != "/" ||
		len(pt["Logging"].([]any)) != 1 || len(pt["Tracing"].([]any)) != 1 || nn(pt["Logging"].([]any)[0].(map[string]any)["Root"]) != "istio-system/mesh" {
		t.Errorf("telemetryz of a proxy: %v", pt)
	}
	if code, _ := getBody(mux, "/debug/telemetryz?proxyID=nobody.default"); code != http.StatusNotFound {
		t.Errorf("telemetryz of an unknown proxy: %d", code)
	}
	if idx := get("/debug/indexz").(map[string]any); idx["version"] == nil {
		t.Errorf("indexz: %v", idx)
	}
}

// A caller restricted to its namespace finds only the proxies of that
// namespace, even by a proxyID that another proxy's connection ID contains.
func TestProxyIDOfAnotherNamespace(t *testing.T) {
	s, _ := viewServer(t)
	other := xdstest.Dial(t, s, adsc.Config{NodeID: "sidecar~10.0.0.2~a.default2~default2.svc.cluster.local", Metadata: map[string]any{"NAMESPACE": "default2"}})
	if err := other.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, other)
	mux := http.NewServeMux()
	debug.New(debug.Options{XDS: s.DS, SystemNamespace: "istio-system", Authenticate: func(r *http.Request) (string, error) {
		return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), nil
	}}).Install(mux)
	for _, c := range []struct {
		token, path string
		want        int
	}{
		{"default", "/debug/config_dump?proxyID=app-1.default", 200},
		{"default", "/debug/ndsz?proxyID=app-1.default", 200},
		{"other", "/debug/config_dump?proxyID=app-1.default", http.StatusForbidden},
		// a.default is no proxy, but the connection ID of a.default2
		// contains it: the guard admits a caller of "default", the lookup
		// finds no proxy of "default" by it; istio-system finds a.default2
		{"default", "/debug/config_dump?proxyID=a.default", http.StatusNotFound},
		{"istio-system", "/debug/config_dump?proxyID=a.default", 200},
	} {
		req, _ := http.NewRequest("GET", c.path, nil)
		req.RemoteAddr = "10.1.2.3:4"
		req.Header.Set("Authorization", "Bearer "+c.token)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s as %s: %d, want %d (%s)", c.path, c.token, rec.Code, c.want, rec.Body.String())
		}
	}
}
