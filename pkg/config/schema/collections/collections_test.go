package collections_test

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/gvr"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
	"github.com/meshplane/istiod/pkg/config/schema/resource"
)

// The matrix of the spec (section 2.1): which lookups accept which versions.
func TestFindMatrix(t *testing.T) {
	vs := func(group, version string) config.GroupVersionKind {
		return config.GroupVersionKind{Group: group, Version: version, Kind: "VirtualService"}
	}
	cases := []struct {
		in                      config.GroupVersionKind
		exact, aliases, grpKind bool
	}{
		{vs("networking.istio.io", "v1"), true, true, true},
		{vs("networking.istio.io", "v1beta1"), false, true, true},
		{vs("networking.istio.io", "v9"), false, false, true},
		{vs("core", "v1"), false, false, false},
	}
	for _, c := range cases {
		t.Run(c.in.String(), func(t *testing.T) {
			_, exact := collections.Pilot.FindByGroupVersionKind(c.in)
			s, aliases := collections.Pilot.FindByGroupVersionAliasesKind(c.in)
			_, grpKind := collections.Pilot.FindByGroupKind(c.in)
			if exact != c.exact || aliases != c.aliases || grpKind != c.grpKind {
				t.Errorf("exact/aliases/groupKind = %v/%v/%v, want %v/%v/%v", exact, aliases, grpKind, c.exact, c.aliases, c.grpKind)
			}
			if aliases && s.GroupVersionKind() != gvk.VirtualService {
				t.Errorf("alias lookup returned %v", s.GroupVersionKind())
			}
		})
	}
}

func TestPilotSets(t *testing.T) {
	want := []string{"AuthorizationPolicy", "DestinationRule", "EnvoyFilter", "Gateway", "PeerAuthentication",
		"ProxyConfig", "RequestAuthentication", "ServiceEntry", "Sidecar", "Telemetry", "TrafficExtension",
		"VirtualService", "WasmPlugin", "WorkloadEntry", "WorkloadGroup"}
	got := collections.Pilot.Kinds()
	if len(got) != len(want) {
		t.Fatalf("Pilot kinds = %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Pilot[%d] = %s, want %s", i, got[i], want[i])
		}
	}
	if n := collections.PilotGatewayAPI().Len(); n != 26 {
		t.Errorf("PilotGatewayAPI has %d kinds, want 15 Pilot + 11 Gateway API", n)
	}
	if _, ok := collections.PilotGatewayAPI().FindByGroupVersionKind(gvk.KubernetesGateway); !ok {
		t.Error("KubernetesGateway missing from PilotGatewayAPI")
	}
	if _, ok := collections.Pilot.FindByGroupVersionKind(gvk.HTTPRoute); ok {
		t.Error("HTTPRoute must not be in Pilot")
	}
	for _, s := range collections.Builtin.All() {
		if !s.IsBuiltin() {
			t.Errorf("%s in Builtin is not builtin", s.Kind())
		}
	}
}

func TestSyntheticKinds(t *testing.T) {
	for _, g := range []config.GroupVersionKind{gvk.MeshConfig, gvk.MeshNetworks} {
		s, ok := collections.All.FindByGroupVersionKind(g)
		if !ok {
			t.Fatalf("%v not registered", g)
		}
		if !s.IsSynthetic() || s.Group() != "" || s.Version() != "v1alpha1" {
			t.Errorf("%v: synthetic=%v group=%q version=%q", g, s.IsSynthetic(), s.Group(), s.Version())
		}
		if _, ok := collections.PilotGatewayAPI().FindByGroupVersionKind(g); ok {
			t.Errorf("%v must not be stored", g)
		}
	}
}

func TestSchemaMethods(t *testing.T) {
	s := collections.VirtualService
	if s.APIVersion() != "networking.istio.io/v1" || s.Plural() != "virtualservices" || s.IsClusterScoped() {
		t.Errorf("unexpected schema %v", s)
	}
	aliases := s.GroupVersionAliasKinds()
	if len(aliases) != 3 || aliases[0].Version != "v1alpha3" || aliases[1].Version != "v1beta1" || aliases[2] != gvk.VirtualService {
		t.Errorf("aliases = %v", aliases)
	}
	if s.GroupVersionResource() != gvr.VirtualService {
		t.Errorf("gvr = %v", s.GroupVersionResource())
	}
	inst, err := s.NewInstance()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := inst.(*networking.VirtualService); !ok {
		t.Errorf("NewInstance returned %T", inst)
	}
	if s.StatusKind() != "IstioStatus" {
		t.Errorf("StatusKind = %q", s.StatusKind())
	}
	if collections.ServiceEntry.StatusKind() != "ServiceEntryStatus" {
		t.Errorf("ServiceEntry StatusKind = %q", collections.ServiceEntry.StatusKind())
	}
	if _, err := collections.ReferenceGrant.Status(); err == nil || err.Error() != "unknown status type" {
		t.Errorf("ReferenceGrant.Status() error = %v", err)
	}
	if collections.ReferenceGrant.StatusKind() != "" {
		t.Errorf("ReferenceGrant StatusKind = %q", collections.ReferenceGrant.StatusKind())
	}
	if !s.Equal(collections.VirtualService) || s.Equal(collections.Gateway) {
		t.Error("Equal is wrong")
	}
	if !collections.GatewayClass.IsClusterScoped() || !collections.Namespace.IsClusterScoped() {
		t.Error("cluster scoped kinds not marked")
	}
}

func TestFindByGroupVersionResource(t *testing.T) {
	s, ok := collections.All.FindByGroupVersionResource(gvr.KubernetesGateway)
	if !ok || s.Identifier() != "KubernetesGateway" {
		t.Errorf("got %v %v", s, ok)
	}
	if _, ok := collections.All.FindByGroupVersionResource(schema.GroupVersionResource{Group: "x", Version: "v1", Resource: "y"}); ok {
		t.Error("unknown GVR found")
	}
}

func TestKindAndGVKConversions(t *testing.T) {
	for _, s := range collections.All.All() {
		k, ok := gvk.ToKind(s.GroupVersionKind())
		if !ok {
			t.Fatalf("%v has no kind", s.GroupVersionKind())
		}
		if k.String() != s.Identifier() {
			t.Errorf("kind %v for %s", k, s.Identifier())
		}
		for _, a := range s.GroupVersionAliasKinds() {
			if ak, _ := gvk.ToKind(a); ak != k {
				t.Errorf("alias %v maps to %v, want %v", a, ak, k)
			}
		}
		if back := gvk.MustFromKind(k); back != s.GroupVersionKind() {
			t.Errorf("FromKind(%v) = %v", k, back)
		}
		if gk, ok := gvr.ToKind(s.GroupVersionResource()); !ok || gk != k {
			t.Errorf("gvr.ToKind(%v) = %v", s.GroupVersionResource(), gk)
		}
	}
	if k, ok := kind.FromString("KubernetesGateway"); !ok || k != kind.KubernetesGateway {
		t.Error("kind.FromString")
	}
	if gvk.Gateway == gvk.KubernetesGateway {
		t.Error("Istio Gateway and Gateway API Gateway must differ")
	}
}

func TestSchemasBuilderRejectsDuplicates(t *testing.T) {
	b := collection.NewSchemasBuilder()
	if err := b.Add(collections.VirtualService); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(collections.VirtualService); err == nil {
		t.Error("duplicate accepted")
	}
	defer func() {
		if recover() == nil {
			t.Error("MustAdd of a duplicate did not panic")
		}
	}()
	b.MustAdd(collections.VirtualService)
}

func TestSchemasSetOperations(t *testing.T) {
	a := collection.SchemasFor(collections.VirtualService, collections.Gateway)
	b := collection.SchemasFor(collections.Gateway, collections.Sidecar)
	if got := a.Union(b).Kinds(); len(got) != 3 || got[0] != "VirtualService" || got[2] != "Sidecar" {
		t.Errorf("union = %v", got)
	}
	if got := a.Intersect(b).Kinds(); len(got) != 1 || got[0] != "Gateway" {
		t.Errorf("intersect = %v", got)
	}
	if got := a.Remove(collections.VirtualService).Kinds(); len(got) != 1 || got[0] != "Gateway" {
		t.Errorf("remove = %v", got)
	}
	if got := a.Add(collections.Sidecar, collections.Gateway).Kinds(); len(got) != 3 {
		t.Errorf("add = %v", got)
	}
	var seen []string
	a.ForEach(func(s resource.Schema) bool { seen = append(seen, s.Kind()); return true })
	if len(seen) != 1 || seen[0] != "VirtualService" {
		t.Errorf("ForEach should stop after the first schema, saw %v", seen)
	}
}
