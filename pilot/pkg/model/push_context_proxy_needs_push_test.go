package model_test

import (
	"slices"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// needsPushFixture: namespace app has reviews (public) and a private
// service; namespace other has a Sidecar importing only its own namespace.
func needsPushFixture(t *testing.T) *pcEnv {
	e := newPCEnv(t)
	e.addService(svcHost("reviews", "app"), "app", 0)
	e.addService(svcHost("secret", "hidden"), "hidden", 1, func(s *model.Service) { s.Attributes.ExportTo = model.NewExportTo(".") })
	e.create(kind.VirtualService, "app", "reviews", 0, &networking.VirtualService{Hosts: []string{"reviews"}, Http: route("reviews")})
	e.create(kind.VirtualService, "hidden", "private", 1, &networking.VirtualService{Hosts: []string{"secret"}, ExportTo: []string{"."}, Http: route("secret")})
	e.create(kind.DestinationRule, "app", "reviews", 0, &networking.DestinationRule{Host: "reviews"})
	e.create(kind.DestinationRule, "app", "unrelated", 1, &networking.DestinationRule{Host: "nothing.example.com"})
	e.create(kind.Sidecar, "other", "own-only", 0, &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*"}}}})
	return e
}

func TestProxyNeedsPush(t *testing.T) {
	e := needsPushFixture(t)
	p := e.push()
	app := sidecarProxy("app", nil)
	other := sidecarProxy("other", nil)
	gw := gatewayProxy("app", nil)
	req := func(keys ...model.ConfigKey) *model.PushRequest {
		r := pcFull(keys...)
		r.Push = p
		return r
	}
	cases := []struct {
		name  string
		proxy *model.Proxy
		req   *model.PushRequest
		want  bool
	}{
		{"nil request", app, nil, true},
		{"forced", other, &model.PushRequest{Forced: true, Full: true, Push: p, ConfigsUpdated: model.NewConfigKeys(pcKey(kind.VirtualService, "x", "y"))}, true},
		{"everything", other, &model.PushRequest{Full: true, Push: p}, true},
		{"no push context", other, &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(pcKey(kind.VirtualService, "x", "y"))}, true},
		{"waypoint", &model.Proxy{Type: model.Waypoint, ConfigNamespace: "other"}, req(pcKey(kind.VirtualService, "x", "y")), true},

		{"sidecar ignores Gateway", app, req(pcKey(kind.Gateway, "app", "gw")), false},
		{"sidecar ignores Kubernetes Gateway", app, req(pcKey(kind.KubernetesGateway, "app", "gw")), false},
		{"gateway ignores Sidecar", gw, req(pcKey(kind.Sidecar, "app", "s")), false},
		{"gateway takes Gateway", gw, req(pcKey(kind.Gateway, "app", "gw")), true},
		{"gateway takes any VirtualService", gw, req(pcKey(kind.VirtualService, "hidden", "private")), true},
		{"gateway takes visible service", gw, req(model.ServiceConfigKey(svcHost("reviews", "app"), "app")), true},
		{"gateway skips invisible service", gw, req(model.ServiceConfigKey(svcHost("secret", "hidden"), "hidden")), false},

		{"visible VirtualService", app, req(pcKey(kind.VirtualService, "app", "reviews")), true},
		{"invisible VirtualService", app, req(pcKey(kind.VirtualService, "hidden", "private")), false},
		{"VirtualService outside Sidecar imports", other, req(pcKey(kind.VirtualService, "app", "reviews")), false},
		{"new VirtualService unknown to the scope", app, req(pcKey(kind.VirtualService, "app", "brand-new")), false},
		{"DestinationRule of a visible service", app, req(pcKey(kind.DestinationRule, "app", "reviews")), true},
		{"DestinationRule of no service", app, req(pcKey(kind.DestinationRule, "app", "unrelated")), false},
		{"visible service", app, req(model.ServiceConfigKey(svcHost("reviews", "app"), "app")), true},
		{"invisible service", app, req(model.ServiceConfigKey(svcHost("secret", "hidden"), "hidden")), false},
		{"service outside Sidecar imports", other, req(model.ServiceConfigKey(svcHost("reviews", "app"), "app")), false},
		{"own Sidecar", other, req(pcKey(kind.Sidecar, "other", "own-only")), true},
		{"Sidecar of another namespace", app, req(pcKey(kind.Sidecar, "other", "own-only")), false},

		{"EnvoyFilter in own namespace", app, req(pcKey(kind.EnvoyFilter, "app", "f")), true},
		{"EnvoyFilter in root namespace", other, req(pcKey(kind.EnvoyFilter, "istio-system", "f")), true},
		{"EnvoyFilter elsewhere", app, req(pcKey(kind.EnvoyFilter, "other", "f")), false},
		{"AuthorizationPolicy elsewhere", app, req(pcKey(kind.AuthorizationPolicy, "other", "p")), false},
		{"Telemetry in own namespace", app, req(pcKey(kind.Telemetry, "app", "t")), true},
		{"kind a scope does not track", other, req(pcKey(kind.Secret, "app", "s")), true},
		{"one relevant key among others", other, req(pcKey(kind.EnvoyFilter, "app", "f"), pcKey(kind.Sidecar, "other", "own-only")), true},

		{"endpoint update of a visible service", app, &model.PushRequest{Push: p, ConfigsUpdated: model.NewConfigKeys(model.ServiceConfigKey(svcHost("reviews", "app"), "app"))}, true},
		{"endpoint update outside Sidecar imports", other, &model.PushRequest{Push: p, ConfigsUpdated: model.NewConfigKeys(model.ServiceConfigKey(svcHost("reviews", "app"), "app"))}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := model.ProxyNeedsPush(tc.proxy, tc.req); got != tc.want {
				t.Errorf("ProxyNeedsPush = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestProxyNeedsPushPreviousScope: a deleted object is only in the old
// scope; a new Sidecar only in the new one.
func TestProxyNeedsPushPreviousScope(t *testing.T) {
	e := needsPushFixture(t)
	p1 := e.push()
	app := sidecarProxy("app", nil)
	lastScope := p1.SidecarScope(app)

	if err := e.store.Delete(gvk.VirtualService, "reviews", "app", nil); err != nil {
		t.Fatal(err)
	}
	delKey := pcKey(kind.VirtualService, "app", "reviews")
	p2 := model.InitContext(e.env, p1, pcFull(delKey))
	r := pcFull(delKey)
	r.Push = p2
	if p2.SidecarScope(app).DependsOnConfig(delKey) {
		t.Fatal("new scope still depends on the deleted VirtualService")
	}
	if !model.ProxyNeedsPush(app, r) {
		t.Error("deleting a VirtualService the proxy used must push")
	}

	// After an unrelated push the previous scope is still the one before
	// the deletion.
	p3 := model.InitContext(e.env, p2, pcFull(pcKey(kind.EnvoyFilter, "x", "f")))
	r = pcFull(delKey)
	r.Push = p3
	if !model.ProxyNeedsPush(app, r) {
		t.Error("merged request naming the deleted VirtualService must still push")
	}
	// The connection's own last scope covers the case where scopes changed
	// twice since the proxy's last push.
	p4 := model.InitContext(e.env, p3, pcFull(model.ServiceConfigKey("x", "y")))
	p5 := model.InitContext(e.env, p4, pcFull(model.ServiceConfigKey("x", "y")))
	r = pcFull(delKey)
	r.Push = p5
	if model.ProxyNeedsPush(app, r) {
		t.Error("two scope changes later the snapshot no longer knows the deleted VirtualService")
	}
	if !model.ProxyNeedsPushSince(app, r, lastScope) {
		t.Error("the proxy's last scope must be consulted")
	}

	// A new Sidecar in the proxy's namespace is only in the new scope.
	e.create(kind.Sidecar, "app", "new", 5, &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*"}}}})
	scKey := pcKey(kind.Sidecar, "app", "new")
	p6 := model.InitContext(e.env, p5, pcFull(scKey))
	r = pcFull(scKey)
	r.Push = p6
	if !model.ProxyNeedsPush(app, r) || p6.SidecarScope(app).Name != "new" {
		t.Error("a new Sidecar for the proxy must push")
	}
}

func TestTypesNeedPush(t *testing.T) {
	e := needsPushFixture(t)
	e.create(kind.VirtualService, "other", "local", 2, &networking.VirtualService{Hosts: []string{"local"}, Http: route("local")})
	p := e.push()
	const (
		cds = model.ClusterTypeURL
		eds = model.EndpointTypeURL
		lds = model.ListenerTypeURL
		rds = model.RouteTypeURL
		sds = model.SecretTypeURL
		nds = model.NameTableTypeURL
		ecd = model.ExtensionConfigTypeURL
	)
	app := sidecarProxy("app", nil)
	other := sidecarProxy("other", nil)
	gw := gatewayProxy("app", nil)
	full := func(keys ...model.ConfigKey) *model.PushRequest {
		r := pcFull(keys...)
		r.Push = p
		return r
	}
	svcKey := model.ServiceConfigKey(svcHost("reviews", "app"), "app")
	cases := []struct {
		name  string
		proxy *model.Proxy
		req   *model.PushRequest
		want  []string
	}{
		{"everything", app, &model.PushRequest{Full: true, Push: p}, model.PushTypeURLs},
		{"endpoints only", app, &model.PushRequest{Push: p, ConfigsUpdated: model.NewConfigKeys(svcKey)}, []string{eds}},
		{"service", app, full(svcKey), []string{cds, eds, lds, rds, nds}},
		// ours: Istio regenerates the clusters too, and sends them unchanged
		{"VirtualService to a sidecar without Sidecar", app, full(pcKey(kind.VirtualService, "app", "reviews")), []string{lds, rds}},
		{"VirtualService to a sidecar with a Sidecar", other, full(pcKey(kind.VirtualService, "other", "local")), []string{cds, lds, rds}},
		{"VirtualService to a gateway", gw, full(pcKey(kind.VirtualService, "app", "reviews")), []string{cds, lds, rds}},
		{"DestinationRule", app, full(pcKey(kind.DestinationRule, "app", "reviews")), []string{cds, eds, lds, rds}},
		{"AuthorizationPolicy", app, full(pcKey(kind.AuthorizationPolicy, "app", "p")), []string{lds}},
		{"RequestAuthentication", app, full(pcKey(kind.RequestAuthentication, "app", "p")), []string{lds}},
		{"PeerAuthentication", app, full(pcKey(kind.PeerAuthentication, "app", "p")), []string{cds, eds, lds}},
		{"Telemetry", app, full(pcKey(kind.Telemetry, "app", "t")), []string{lds}},
		{"WasmPlugin", app, full(pcKey(kind.WasmPlugin, "app", "w")), []string{lds, ecd}},
		{"EnvoyFilter", app, full(pcKey(kind.EnvoyFilter, "app", "f")), []string{cds, eds, lds, rds, ecd}},
		{"Secret", app, full(pcKey(kind.Secret, "app", "s")), []string{sds, ecd}},
		{"ProxyConfig", app, full(pcKey(kind.ProxyConfig, "app", "p")), nil},
		{"WorkloadEntry", app, full(pcKey(kind.WorkloadEntry, "app", "w")), []string{eds}},
		{"Gateway to a gateway", gw, full(pcKey(kind.Gateway, "app", "gw")), []string{cds, lds, rds}},
		{"Gateway to a sidecar", app, full(pcKey(kind.Gateway, "app", "gw")), nil},
		{"unrelated VirtualService", app, full(pcKey(kind.VirtualService, "hidden", "private")), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := model.TypesNeedPush(tc.proxy, tc.req, nil); !slices.Equal(got, tc.want) {
				t.Errorf("TypesNeedPush = %v\nwant %v", short(got), short(tc.want))
			}
		})
	}
	if model.TypeNeedsPush(app, full(pcKey(kind.AuthorizationPolicy, "app", "p")), "type.googleapis.com/custom.Type") != true {
		t.Error("unknown types are regenerated on full pushes")
	}
}

func short(urls []string) []string {
	out := make([]string, 0, len(urls))
	for _, u := range urls {
		out = append(out, u[len("type.googleapis.com/"):])
	}
	return out
}

// A sidecar without a Sidecar keeps its listeners across changes of
// VirtualServices without tcp or tls routes; a change that touches one
// with them (gaining, editing or losing them), any other kind, a Sidecar,
// a gateway or a forced push regenerates them.
func TestSidecarListenersUnchangedSince(t *testing.T) {
	e := needsPushFixture(t)
	tcp := func(host string) []*networking.TCPRoute {
		return []*networking.TCPRoute{{Route: []*networking.RouteDestination{{Destination: &networking.Destination{Host: host}}}}}
	}
	e.create(kind.VirtualService, "app", "db", 2, &networking.VirtualService{Hosts: []string{"db"}, Tcp: tcp("db")})
	p1 := e.push()
	step := func(old *model.PushContext, keys ...model.ConfigKey) (*model.PushContext, *model.PushRequest) {
		r := pcFull(keys...)
		r.Push = model.InitContext(e.env, old, r)
		return r.Push, r
	}
	app, other, gw := sidecarProxy("app", nil), sidecarProxy("other", nil), gatewayProxy("app", nil)
	reviews, db := pcKey(kind.VirtualService, "app", "reviews"), pcKey(kind.VirtualService, "app", "db")

	e.update(kind.VirtualService, "app", "reviews", &networking.VirtualService{Hosts: []string{"reviews"}, Http: route("reviews", "reviews")})
	p2, httpOnly := step(p1, reviews)
	if !model.SidecarListenersUnchangedSince(app, httpOnly, p1.Seq()) {
		t.Error("an HTTP-only VirtualService change regenerated the listeners")
	}
	for name, unchanged := range map[string]bool{
		"a sidecar with a Sidecar":        model.SidecarListenersUnchangedSince(other, httpOnly, p1.Seq()),
		"a gateway":                       model.SidecarListenersUnchangedSince(gw, httpOnly, p1.Seq()),
		"never generated":                 model.SidecarListenersUnchangedSince(app, httpOnly, 0),
		"generated from a later snapshot": model.SidecarListenersUnchangedSince(app, httpOnly, p2.Seq()+1),
	} {
		if unchanged {
			t.Errorf("%s: listeners kept", name)
		}
	}
	forced := *httpOnly
	forced.Forced = true
	if model.SidecarListenersUnchangedSince(app, &forced, p1.Seq()) {
		t.Error("a forced push kept the listeners")
	}
	_, withRule := step(p2, reviews, pcKey(kind.DestinationRule, "app", "reviews"))
	if model.SidecarListenersUnchangedSince(app, withRule, p2.Seq()) {
		t.Error("a DestinationRule change kept the listeners")
	}

	// the tcp VirtualService edited, then an HTTP one gaining tcp routes,
	// then losing them: each regenerates, as seen from any earlier snapshot
	e.update(kind.VirtualService, "app", "db", &networking.VirtualService{Hosts: []string{"db"}, Tcp: tcp("reviews")})
	p3, r3 := step(p2, db)
	e.update(kind.VirtualService, "app", "reviews", &networking.VirtualService{Hosts: []string{"reviews"}, Tcp: tcp("reviews")})
	p4, r4 := step(p3, reviews)
	e.update(kind.VirtualService, "app", "reviews", &networking.VirtualService{Hosts: []string{"reviews"}, Http: route("reviews")})
	p5, r5 := step(p4, reviews)
	for name, c := range map[string]struct {
		req   *model.PushRequest
		since *model.PushContext
	}{"tcp routes edited": {r3, p2}, "tcp routes gained": {r4, p3}, "tcp routes lost": {r5, p4}, "lost, seen from further back": {r5, p1}} {
		if model.SidecarListenersUnchangedSince(app, c.req, c.since.Seq()) {
			t.Errorf("%s: listeners kept", name)
		}
	}
	// once regenerated from p5, the next HTTP-only change keeps them
	e.update(kind.VirtualService, "app", "reviews", &networking.VirtualService{Hosts: []string{"reviews"}, Http: route("reviews", "secret")})
	_, r6 := step(p5, reviews)
	if !model.SidecarListenersUnchangedSince(app, r6, p5.Seq()) {
		t.Error("after the tcp routes settled, an HTTP-only change regenerated the listeners")
	}
	if model.SidecarListenersUnchangedSince(app, r6, p3.Seq()) {
		t.Error("listeners generated before the tcp routes changed were kept")
	}
}

// Which pushes change some services' load assignments only (the others a
// proxy holds stay as sent), as Istio's EDS decides it.
func TestPartialEndpointHosts(t *testing.T) {
	svc := model.ServiceConfigKey("reviews.app.svc.cluster.local", "app")
	key := func(k kind.Kind) model.ConfigKey { return model.ConfigKey{Kind: k, Name: "x", Namespace: "app"} }
	for _, c := range []struct {
		name    string
		req     *model.PushRequest
		partial bool
		hosts   []string
	}{
		{"incremental", &model.PushRequest{ConfigsUpdated: model.NewConfigKeys(svc)}, true, []string{"reviews.app.svc.cluster.local"}},
		{"incremental naming nothing", &model.PushRequest{}, true, nil},
		{"full, a service", &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(svc)}, true, []string{"reviews.app.svc.cluster.local"}},
		{"full, a service and a VirtualService", &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(svc, key(kind.VirtualService))}, true, []string{"reviews.app.svc.cluster.local"}},
		{"full, a WorkloadEntry and its service", &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(svc, key(kind.WorkloadEntry))}, true, []string{"reviews.app.svc.cluster.local"}},
		{"full, a DestinationRule", &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(svc, key(kind.DestinationRule))}, false, nil},
		{"full, a PeerAuthentication", &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(key(kind.PeerAuthentication))}, false, nil},
		{"full, naming nothing", &model.PushRequest{Full: true}, false, nil},
		{"forced", &model.PushRequest{Full: true, Forced: true, ConfigsUpdated: model.NewConfigKeys(svc)}, false, nil},
		{"none", nil, false, nil},
	} {
		hosts, partial := model.PartialEndpointHosts(c.req)
		var got []string
		for h := range hosts {
			got = append(got, h)
		}
		slices.Sort(got)
		if partial != c.partial || !slices.Equal(got, c.hosts) {
			t.Errorf("%s: partial %v, hosts %v; want %v, %v", c.name, partial, got, c.partial, c.hosts)
		}
	}
}
