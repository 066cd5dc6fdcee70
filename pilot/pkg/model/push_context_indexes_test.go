package model_test

import (
	"slices"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	securityapi "istio.io/api/security/v1beta1"
	telemetryapi "istio.io/api/telemetry/v1alpha1"
	typeapi "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

func TestServiceVisibility(t *testing.T) {
	e := newPCEnv(t)
	e.addService("public.a", "a", 0)
	e.addService("private.a", "a", 1, func(s *model.Service) { s.Attributes.ExportTo = model.NewExportTo(".") })
	e.addService("to-b.a", "a", 2, func(s *model.Service) { s.Attributes.ExportTo = model.NewExportTo("b") })
	e.addService("none.a", "a", 3, func(s *model.Service) { s.Attributes.ExportTo = model.NewExportTo("~") })
	e.addService("dup.example.com", "b", 4, func(s *model.Service) { s.Attributes.ServiceRegistry = model.External })
	e.addService("dup.example.com", "c", 5)
	p := e.push()
	hosts := func(ns string) []string {
		var out []string
		for _, s := range p.ServicesForProxy(sidecarProxy(ns, nil)) {
			out = append(out, s.Attributes.Namespace+"/"+s.Hostname)
		}
		return out
	}
	if got, want := hosts("a"), []string{"c/dup.example.com", "a/private.a", "a/public.a"}; !slices.Equal(got, want) {
		t.Errorf("a sees %v, want %v", got, want)
	}
	// b has its own dup.example.com: its own namespace wins.
	if got, want := hosts("b"), []string{"b/dup.example.com", "a/public.a", "a/to-b.a"}; !slices.Equal(got, want) {
		t.Errorf("b sees %v, want %v", got, want)
	}
	if s := p.ServiceForHostname(sidecarProxy("z", nil), "dup.example.com"); s == nil || s.Attributes.Namespace != "c" {
		t.Errorf("z should get the Kubernetes service over the ServiceEntry: %v", s)
	}
	if p.ServiceForHostname(sidecarProxy("b", nil), "private.a") != nil {
		t.Error("private service leaked")
	}
	e.mesh.DefaultServiceExportTo = []string{"."}
	p = e.push()
	if got := hosts("b"); !slices.Equal(got, []string{"b/dup.example.com", "a/to-b.a"}) {
		t.Errorf("with defaultServiceExportTo '.', b sees %v", got)
	}
}

func TestGatewaysForProxy(t *testing.T) {
	e := newPCEnv(t)
	e.create(kind.Gateway, "istio-system", "ingress", 0, &networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}})
	e.create(kind.Gateway, "team", "team-gw", 1, &networking.Gateway{Selector: map[string]string{"istio": "ingressgateway"}})
	e.create(kind.Gateway, "team", "egress", 2, &networking.Gateway{Selector: map[string]string{"istio": "egressgateway"}})
	p := e.push()
	gw := gatewayProxy("istio-system", map[string]string{"istio": "ingressgateway"})
	if got := configNames(p.GatewaysForProxy(gw)); !slices.Equal(got, []string{"istio-system/ingress", "team/team-gw"}) {
		t.Errorf("gateways = %v", got)
	}
	if p.Gateway("team", "egress") == nil {
		t.Error("Gateway lookup by name failed")
	}
}

func TestPolicies(t *testing.T) {
	e := newPCEnv(t)
	sel := func(l map[string]string) *typeapi.WorkloadSelector { return &typeapi.WorkloadSelector{MatchLabels: l} }
	e.create(kind.PeerAuthentication, "istio-system", "mesh", 0, &securityapi.PeerAuthentication{})
	e.create(kind.PeerAuthentication, "app", "ns", 1, &securityapi.PeerAuthentication{})
	e.create(kind.PeerAuthentication, "app", "web", 2, &securityapi.PeerAuthentication{Selector: sel(map[string]string{"app": "web"})})
	e.create(kind.PeerAuthentication, "app", "db", 3, &securityapi.PeerAuthentication{Selector: sel(map[string]string{"app": "db"})})
	e.create(kind.AuthorizationPolicy, "app", "gw-only", 4, &securityapi.AuthorizationPolicy{
		TargetRefs: []*typeapi.PolicyTargetReference{{Kind: "Gateway", Group: "gateway.networking.k8s.io", Name: "ingress"}}})
	e.create(kind.Telemetry, "istio-system", "mesh-default", 0, &telemetryapi.Telemetry{})
	e.create(kind.Telemetry, "app", "ns-default", 1, &telemetryapi.Telemetry{})
	e.create(kind.Telemetry, "app", "web", 2, &telemetryapi.Telemetry{Selector: sel(map[string]string{"app": "web"})})
	p := e.push()
	web := sidecarProxy("app", map[string]string{"app": "web"})
	if got := configNames(p.PeerAuthentications(web)); !slices.Equal(got, []string{"app/ns", "app/web", "istio-system/mesh"}) {
		t.Errorf("peer authentications = %v", got)
	}
	if got := p.AuthorizationPolicies(web); len(got) != 0 {
		t.Errorf("a targetRef policy must not select sidecars: %v", configNames(got))
	}
	gw := &model.Proxy{Type: model.Router, ConfigNamespace: "app", Labels: map[string]string{"gateway.networking.k8s.io/gateway-name": "ingress"}}
	if got := configNames(p.AuthorizationPolicies(gw)); !slices.Equal(got, []string{"app/gw-only"}) {
		t.Errorf("gateway authorization policies = %v", got)
	}
	tel := p.Telemetry(web)
	if tel.Root.Name != "mesh-default" || tel.Namespace.Name != "ns-default" || tel.Workload.Name != "web" {
		t.Errorf("telemetry layers = %v %v %v", tel.Root.Name, tel.Namespace.Name, tel.Workload.Name)
	}
	if tel := p.Telemetry(sidecarProxy("app", nil)); tel.Workload != nil {
		t.Error("unselected workload got a workload telemetry")
	}
}

func TestSidecarScopes(t *testing.T) {
	e := newPCEnv(t)
	e.addService(svcHost("reviews", "app"), "app", 0)
	e.addService(svcHost("ratings", "data"), "data", 1)
	e.addService(svcHost("db", "data"), "data", 2)
	e.addService("api.example.com", "ext", 3)
	e.create(kind.VirtualService, "app", "to-db", 0, &networking.VirtualService{Hosts: []string{"reviews"}, Http: route("db.data.svc.cluster.local")})
	e.create(kind.VirtualService, "ext", "api", 1, &networking.VirtualService{Hosts: []string{"api.example.com"}, Http: route("api.example.com")})
	e.create(kind.Sidecar, "app", "narrow", 0, &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*", "data/ratings.data.svc.cluster.local"}}}})
	e.create(kind.Sidecar, "app", "sink", 1, &networking.Sidecar{
		WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"role": "sink"}},
		Egress:           []*networking.IstioEgressListener{{Hosts: []string{"~/*"}}}})
	e.create(kind.Sidecar, "istio-system", "mesh-default", 2, &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"*/*.example.com", "./*"}}}})
	p := e.push()

	hosts := func(sc *model.SidecarScope) []string {
		var out []string
		for _, s := range sc.Services() {
			out = append(out, s.Hostname)
		}
		slices.Sort(out)
		return out
	}
	narrow := p.SidecarScope(sidecarProxy("app", nil))
	if narrow.Name != "narrow" {
		t.Fatalf("scope = %s", narrow.Name)
	}
	// ./* imports reviews and the VirtualService to-db, whose destination
	// db.data is added; ratings is imported by name.
	if got, want := hosts(narrow), []string{svcHost("db", "data"), svcHost("ratings", "data"), svcHost("reviews", "app")}; !slices.Equal(got, want) {
		t.Errorf("narrow scope = %v, want %v", got, want)
	}
	if !narrow.DependsOnConfig(pcKey(kind.Sidecar, "app", "narrow")) || narrow.DependsOnConfig(pcKey(kind.VirtualService, "ext", "api")) {
		t.Error("narrow scope dependencies wrong")
	}
	if sink := p.SidecarScope(sidecarProxy("app", map[string]string{"role": "sink"})); sink.Name != "sink" || len(sink.Services()) != 0 {
		t.Errorf("sink scope = %s with %v", sink.Name, hosts(sink))
	}
	// A namespace without Sidecar inherits the root one, applied to itself.
	other := p.SidecarScope(sidecarProxy("data", nil))
	if got, want := hosts(other), []string{"api.example.com", svcHost("db", "data"), svcHost("ratings", "data")}; other.Name != "mesh-default" || !slices.Equal(got, want) {
		t.Errorf("root-derived scope %s = %v, want %v", other.Name, got, want)
	}
	// Gateways always get the default scope.
	if gw := p.SidecarScope(gatewayProxy("app", nil)); gw.Name != model.DefaultSidecarName || len(gw.Services()) != 4 {
		t.Errorf("gateway scope = %s with %v", gw.Name, hosts(gw))
	}
	if p.SidecarScope(sidecarProxy("app", nil)) != narrow {
		t.Error("scopes must be computed once per snapshot")
	}
}
