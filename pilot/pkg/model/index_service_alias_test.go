package model_test

import (
	"slices"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

func externalName(target string) func(*model.Service) {
	return func(s *model.Service) {
		s.Resolution, s.MeshExternal = model.Alias, true
		s.Attributes.K8sAttributes = model.K8sAttributes{Type: "ExternalName", ExternalName: target}
	}
}

func aliasNames(s *model.Service) []string {
	var out []string
	for _, a := range s.Attributes.Aliases {
		out = append(out, a.Namespace+"/"+a.Hostname)
	}
	return out
}

// Istio's resolveServiceAliases and matchingAliasService: a service's
// aliases are the ExternalName services that name it, through chains of
// aliases (a loop names nothing), sorted by namespace then hostname; a
// Sidecar keeps only the aliases its imports cover. The registry's
// services are not modified.
func TestServiceAliases(t *testing.T) {
	e := newPCEnv(t)
	db := e.addService(svcHost("db", "data"), "data", 0)
	e.addService(svcHost("db-alias", "app"), "app", 1, externalName(svcHost("db", "data")))
	e.addService(svcHost("db-alias", "data"), "data", 2, externalName(svcHost("db", "data")))
	e.addService(svcHost("db-hop", "app"), "app", 3, externalName(svcHost("db-alias", "app")))
	e.addService(svcHost("loop-a", "app"), "app", 4, externalName(svcHost("loop-b", "app")))
	e.addService(svcHost("loop-b", "app"), "app", 5, externalName(svcHost("loop-a", "app")))
	e.create(kind.Sidecar, "app", "default", 0, &networking.Sidecar{Egress: []*networking.IstioEgressListener{
		{Hosts: []string{"data/" + svcHost("db", "data"), "data/" + svcHost("db-alias", "data"), "app/" + svcHost("db-hop", "app")}}}})

	push := e.push()
	got := push.ServiceForHostnameAndNamespace(svcHost("db", "data"), "data")
	want := []string{"app/" + svcHost("db-alias", "app"), "app/" + svcHost("db-hop", "app"), "data/" + svcHost("db-alias", "data")}
	if got == nil || !slices.Equal(aliasNames(got), want) {
		t.Fatalf("aliases of db: %v, want %v", aliasNames(got), want)
	}
	if len(db.Attributes.Aliases) != 0 {
		t.Errorf("the registry's service was modified: %v", aliasNames(db))
	}
	for _, h := range []string{svcHost("loop-a", "app"), svcHost("loop-b", "app")} {
		if s := push.ServiceForHostnameAndNamespace(h, "app"); s == nil || len(s.Attributes.Aliases) != 0 {
			t.Errorf("%s: aliases %v in a loop", h, aliasNames(s))
		}
	}

	// the Sidecar of app imports db from data, whose imports name one of
	// its aliases (by hostname; the import of app does not count)
	var inScope *model.Service
	for _, s := range push.SidecarScope(sidecarProxy("app", nil)).EgressListeners[0].Services() {
		if s.Hostname == svcHost("db", "data") {
			inScope = s
		}
	}
	if inScope == nil || !slices.Equal(aliasNames(inScope), []string{"data/" + svcHost("db-alias", "data")}) {
		t.Errorf("aliases of db in app's Sidecar: %v", aliasNames(inScope))
	}
	// without a Sidecar every alias stays
	for _, s := range push.SidecarScope(sidecarProxy("data", nil)).EgressListeners[0].Services() {
		if s.Hostname == svcHost("db", "data") && !slices.Equal(aliasNames(s), want) {
			t.Errorf("aliases of db in data's default scope: %v", aliasNames(s))
		}
	}
}
