package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/gateway"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// staticInputs holds a snapshot in static collections.
type staticInputs struct {
	classes, gateways, http, grpc, tcp, tls, grants, serviceEntries krt.StaticCollection[config.Config]
	services                                                        krt.StaticCollection[gateway.ServiceInfo]
	namespaces                                                      krt.StaticCollection[gateway.NamespaceInfo]
	secrets                                                         krt.StaticCollection[gateway.SecretData]
	configMaps                                                      krt.StaticCollection[gateway.ConfigMapData]
}

func newStaticInputs(s gateway.Snapshot) *staticInputs {
	in := &staticInputs{
		classes: krt.NewStaticCollection(s.GatewayClasses), gateways: krt.NewStaticCollection(s.Gateways),
		http: krt.NewStaticCollection(s.HTTPRoutes), grpc: krt.NewStaticCollection(s.GRPCRoutes),
		tcp: krt.NewStaticCollection(s.TCPRoutes), tls: krt.NewStaticCollection(s.TLSRoutes),
		grants: krt.NewStaticCollection(s.ReferenceGrants), serviceEntries: krt.NewStaticCollection(s.ServiceEntries),
		services: krt.NewStaticCollection(s.Services), namespaces: krt.NewStaticCollection(s.Namespaces),
	}
	var secrets []gateway.SecretData
	for k, d := range s.Secrets {
		ns, name, _ := strings.Cut(k, "/")
		secrets = append(secrets, gateway.SecretData{Namespace: ns, Name: name, Data: d})
	}
	var cms []gateway.ConfigMapData
	for k, d := range s.ConfigMaps {
		ns, name, _ := strings.Cut(k, "/")
		cms = append(cms, gateway.ConfigMapData{Namespace: ns, Name: name, Data: d})
	}
	in.secrets, in.configMaps = krt.NewStaticCollection(secrets), krt.NewStaticCollection(cms)
	return in
}

func (in *staticInputs) inputs() gateway.Inputs {
	return gateway.Inputs{GatewayClasses: in.classes, Gateways: in.gateways, HTTPRoutes: in.http, GRPCRoutes: in.grpc,
		TCPRoutes: in.tcp, TLSRoutes: in.tls, ReferenceGrants: in.grants, ServiceEntries: in.serviceEntries,
		Services: in.services, Namespaces: in.namespaces, Secrets: in.secrets, ConfigMaps: in.configMaps}
}

func newSource(t *testing.T, in *staticInputs) *gateway.Source {
	t.Helper()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	src := gateway.NewSource(in.inputs(), gateway.SourceOptions{Options: gateway.Options{DomainSuffix: domain}, Stop: stop})
	deadline := time.Now().Add(10 * time.Second)
	for !src.HasSynced() {
		if time.Now().After(deadline) {
			t.Fatal("source never synced")
		}
		time.Sleep(time.Millisecond)
	}
	return src
}

// eventuallyOutput waits until the source renders as want.
func eventuallyOutput(t *testing.T, src *gateway.Source, want []byte) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := render(t, src.Output())
		if string(got) == string(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("source output differs from Translate:\n--- source\n%s\n--- translate\n%s", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSourceMatchesTranslate checks that the incremental source gives
// what Translate gives, for every golden case.
func TestSourceMatchesTranslate(t *testing.T) {
	cases, _ := filepath.Glob("testdata/*.in.yaml")
	for _, in := range cases {
		t.Run(strings.TrimSuffix(filepath.Base(in), ".in.yaml"), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			snap := loadSnapshot(t, data)
			src := newSource(t, newStaticInputs(snap))
			eventuallyOutput(t, src, render(t, gateway.Translate(snap, gateway.Options{DomainSuffix: domain})))
		})
	}
}

// TestSourceMatchesTranslateIstioCases does the same for Istio's cases.
func TestSourceMatchesTranslateIstioCases(t *testing.T) {
	dir := istioTestdata(t)
	fixtures := istioFixtures(t)
	for name := range parityCases {
		t.Run(name, func(t *testing.T) {
			snap := istioSnapshot(t, dir, name, fixtures)
			src := gateway.NewSource(newStaticInputs(snap).inputs(), gateway.SourceOptions{Options: gateway.Options{DomainSuffix: "domain.suffix"},
				Stop: stopOf(t)})
			eventuallyOutput(t, src, render(t, gateway.Translate(snap, gateway.Options{DomainSuffix: "domain.suffix"})))
		})
	}
}

func stopOf(t *testing.T) chan struct{} {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	return stop
}

// TestSourceFollowsChanges applies changes to the inputs and checks that
// the source ends where a fresh translation of the changed inputs is:
// a ReferenceGrant removed while in use, a Secret replaced by garbage, a
// listener removed, a namespace relabelled, a backend deleted.
func TestSourceFollowsChanges(t *testing.T) {
	load := func(name string) gateway.Snapshot {
		data, err := os.ReadFile(filepath.Join("testdata", name+".in.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return loadSnapshot(t, data)
	}
	snap := load("reference-grants")
	in := newStaticInputs(snap)
	src := newSource(t, in)
	var prev []byte
	check := func(step string) {
		t.Helper()
		want := render(t, gateway.Translate(snap, gateway.Options{DomainSuffix: domain}))
		if string(want) == string(prev) {
			t.Errorf("%s: the change changes nothing; the step tests nothing", step)
		}
		prev = want
		eventuallyOutput(t, src, want)
	}
	check("initial")

	grant := snap.ReferenceGrants[1]
	snap.ReferenceGrants = append(snap.ReferenceGrants[:1:1], snap.ReferenceGrants[2:]...)
	in.grants.Delete(grant.Namespace + "/" + grant.Name)
	check("grant removed")

	snap.ReferenceGrants = append(snap.ReferenceGrants, grant)
	in.grants.Set(grant)
	check("grant restored")

	snap.Secrets["certs/cert"] = map[string][]byte{"tls.crt": []byte("x"), "tls.key": []byte("y")}
	in.secrets.Set(gateway.SecretData{Namespace: "certs", Name: "cert", Data: snap.Secrets["certs/cert"]})
	check("secret broken")

	gw := snap.Gateways[0].DeepCopy()
	spec := gw.Spec.(*gatewayv1.GatewaySpec)
	spec.Listeners = spec.Listeners[:1]
	gw.Generation++
	snap.Gateways[0] = gw
	in.gateways.Set(gw)
	check("listeners removed")

	snap = load("allowed-routes")
	in = newStaticInputs(snap)
	src = newSource(t, in)
	check("allowed routes")
	for i, ns := range snap.Namespaces {
		if ns.Name == "team-b" {
			snap.Namespaces[i] = gateway.NamespaceInfo{Name: "team-b", Labels: map[string]string{"team": "a"}}
			in.namespaces.Set(snap.Namespaces[i])
		}
	}
	check("namespace relabelled")

	var kept []gateway.ServiceInfo
	for _, s := range snap.Services {
		if s.Namespace != "team-a" {
			kept = append(kept, s)
		}
	}
	snap.Services = kept
	in.services.Delete("team-a/app.team-a.svc.cluster.local")
	check("backend deleted")
}

// TestProblemsOnBoard checks that what statuses report as wrong is listed
// for /debug/warningz, and cleared once fixed.
func TestProblemsOnBoard(t *testing.T) {
	data, err := os.ReadFile("testdata/backends.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap := loadSnapshot(t, data)
	in := newStaticInputs(snap)
	board := diag.New(nil)
	src := gateway.NewSource(in.inputs(), gateway.SourceOptions{Options: gateway.Options{DomainSuffix: domain}, Stop: stopOf(t), Problems: board})
	find := func(object, substr string) bool {
		for _, p := range board.List() {
			if p.Source == "gateway-api" && p.Object == object && strings.Contains(p.Message, substr) {
				return true
			}
		}
		return false
	}
	waitFor(t, "missing backend reported", func() bool {
		return src.HasSynced() && find("HTTPRoute apps/missing", "ResolvedRefs=False BackendNotFound: backend(nowhere.example.com) not found")
	})
	if find("HTTPRoute apps/good", "") {
		t.Errorf("a good route is on the board: %+v", board.List())
	}
	in.http.Delete("apps/missing")
	waitFor(t, "deleted route cleared", func() bool { return !find("HTTPRoute apps/missing", "") })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
