package model

import (
	"cmp"
	"slices"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// These tests are internal: they check that an incremental InitContext
// shares the untouched indexes by pointer, which only the package sees.
// pilot/pkg/config/memory imports this package, so a tiny store stands in.

type tinyStore struct {
	version int
	objs    map[config.GroupVersionKind]map[string]config.Config
}

func newTinyStore() *tinyStore {
	return &tinyStore{objs: map[config.GroupVersionKind]map[string]config.Config{}}
}

func (s *tinyStore) Schemas() collection.Schemas { return collection.Schemas{} }

func (s *tinyStore) Get(g config.GroupVersionKind, name, ns string) *config.Config {
	if c, ok := s.objs[g][ns+"/"+name]; ok {
		return &c
	}
	return nil
}

func (s *tinyStore) List(g config.GroupVersionKind, ns string) []config.Config {
	var out []config.Config
	for _, c := range s.objs[g] {
		if ns == "" || c.Namespace == ns {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b config.Config) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func (s *tinyStore) Create(c config.Config) (string, error) { return s.Update(c) }

func (s *tinyStore) Update(c config.Config) (string, error) {
	s.version++
	c = c.DeepCopy()
	c.ResourceVersion = strconv.Itoa(s.version)
	if s.objs[c.GroupVersionKind] == nil {
		s.objs[c.GroupVersionKind] = map[string]config.Config{}
	}
	s.objs[c.GroupVersionKind][c.Namespace+"/"+c.Name] = c
	return c.ResourceVersion, nil
}

func (s *tinyStore) UpdateStatus(c config.Config) (string, error) { return s.Update(c) }

func (s *tinyStore) Patch(c config.Config, f PatchFunc) (string, error) { return s.Update(f(c)) }

func (s *tinyStore) Delete(g config.GroupVersionKind, name, ns string, _ *string) error {
	delete(s.objs[g], ns+"/"+name)
	return nil
}

type tinyDiscovery struct{ services []*Service }

func (d *tinyDiscovery) Services() []*Service                               { return d.services }
func (d *tinyDiscovery) GetService(string) *Service                         { return nil }
func (d *tinyDiscovery) GetProxyServiceTargets(*ProxyQuery) []ServiceTarget { return nil }

type reuseFixture struct {
	store *tinyStore
	mesh  *meshconfig.MeshConfig
	env   *Environment
}

func newReuseFixture(t *testing.T) *reuseFixture {
	f := &reuseFixture{store: newTinyStore(), mesh: mesh.DefaultMeshConfig()}
	disc := &tinyDiscovery{services: []*Service{{Hostname: "reviews.default.svc.cluster.local", Attributes: ServiceAttributes{Namespace: "default", ServiceRegistry: Kubernetes}}}}
	f.env = NewEnvironment(EnvironmentOptions{ConfigStore: f.store, ServiceDiscovery: disc, Mesh: func() *meshconfig.MeshConfig { return f.mesh }})
	f.put(gvk.VirtualService, "a", &networking.VirtualService{Hosts: []string{"reviews"}, Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "reviews"}}}}}})
	f.put(gvk.VirtualService, "b", &networking.VirtualService{Hosts: []string{"ratings"}})
	f.put(gvk.DestinationRule, "dr", &networking.DestinationRule{Host: "reviews"})
	f.put(gvk.Gateway, "gw", &networking.Gateway{})
	f.put(gvk.EnvoyFilter, "ef", &networking.EnvoyFilter{})
	return f
}

func (f *reuseFixture) put(g config.GroupVersionKind, name string, spec config.Spec) {
	_, _ = f.store.Update(config.Config{Meta: config.Meta{GroupVersionKind: g, Name: name, Namespace: "default", CreationTimestamp: time.Unix(0, 0)}, Spec: spec})
}

// sameIndexes returns the names of the indexes a and b share by pointer.
func sameIndexes(a, b *PushContext) []string {
	var out []string
	for _, s := range indexSpecs {
		if s.get(a) == s.get(b) {
			out = append(out, s.name)
		}
	}
	return out
}

func TestInitContextReusesUntouchedIndexes(t *testing.T) {
	f := newReuseFixture(t)
	p1 := InitContext(f.env, nil, nil)
	if !p1.FullRebuild || len(p1.Reused) != 0 || !slices.Equal(p1.Rebuilt, IndexNames()) {
		t.Fatalf("first push: full=%v rebuilt=%v reused=%v", p1.FullRebuild, p1.Rebuilt, p1.Reused)
	}

	f.put(gvk.VirtualService, "a", &networking.VirtualService{Hosts: []string{"reviews"}, Gateways: []string{"gw"}})
	p2 := InitContext(f.env, p1, &PushRequest{Full: true, ConfigsUpdated: NewConfigKeys(ConfigKey{Kind: kind.VirtualService, Name: "a", Namespace: "default"})})
	wantRebuilt := []string{IndexVirtualServices, IndexSidecars, IndexRouteChecks}
	if p2.FullRebuild || !slices.Equal(p2.Rebuilt, wantRebuilt) {
		t.Fatalf("VirtualService update rebuilt %v (full=%v), want %v", p2.Rebuilt, p2.FullRebuild, wantRebuilt)
	}
	shared := sameIndexes(p1, p2)
	if !slices.Equal(shared, p2.Reused) || len(shared) != len(indexSpecs)-len(wantRebuilt) {
		t.Errorf("shared by pointer %v, reported reused %v", shared, p2.Reused)
	}
	// The unchanged VirtualService's resolved copy is reused too.
	if p1.VirtualService("default", "b").Spec != p2.VirtualService("default", "b").Spec {
		t.Error("unchanged VirtualService was copied again")
	}
	if p1.VirtualService("default", "a").Spec == p2.VirtualService("default", "a").Spec {
		t.Error("changed VirtualService was reused")
	}
	if got := p2.VirtualServicesForGateway("default", "default/gw"); len(got) != 1 {
		t.Errorf("updated VirtualService not re-indexed: %v", got)
	}
	if p2.prevSidecars != p1.sidecars {
		t.Error("previous sidecar index not kept")
	}

	// A kind no index reads: everything shared; the previous sidecar index
	// stays the one before the last scope change.
	p3 := InitContext(f.env, p2, &PushRequest{Full: true, ConfigsUpdated: NewConfigKeys(ConfigKey{Kind: kind.WorkloadEntry, Name: "w", Namespace: "default"})})
	if len(p3.Rebuilt) != 0 || len(sameIndexes(p2, p3)) != len(indexSpecs) || p3.prevSidecars != p1.sidecars {
		t.Errorf("unrelated kind rebuilt %v", p3.Rebuilt)
	}

	// A service change rebuilds services and what depends on it.
	p4 := InitContext(f.env, p3, &PushRequest{Full: true, ConfigsUpdated: NewConfigKeys(ServiceConfigKey("reviews.default.svc.cluster.local", "default"))})
	if want := []string{IndexServices, IndexNetworkGateways, IndexSidecars, IndexRouteChecks, IndexSubsetChecks}; !slices.Equal(p4.Rebuilt, want) {
		t.Errorf("service change rebuilt %v, want %v", p4.Rebuilt, want)
	}
	// Endpoint-only requests rebuild nothing.
	p5 := InitContext(f.env, p4, &PushRequest{ConfigsUpdated: NewConfigKeys(ServiceConfigKey("reviews.default.svc.cluster.local", "default"))})
	if len(p5.Rebuilt) != 0 {
		t.Errorf("EDS request rebuilt %v", p5.Rebuilt)
	}
	// Gateway API kinds rebuild what they are translated into.
	p6 := InitContext(f.env, p5, &PushRequest{Full: true, ConfigsUpdated: NewConfigKeys(ConfigKey{Kind: kind.HTTPRoute, Name: "r", Namespace: "default"})})
	for _, n := range []string{IndexVirtualServices, IndexDestinationRules, IndexGateways} {
		if !slices.Contains(p6.Rebuilt, n) {
			t.Errorf("HTTPRoute change did not rebuild %s", n)
		}
	}
	if !slices.Equal(p1.Rebuilt, IndexNames()) {
		t.Error("old snapshot modified")
	}
}

func TestInitContextFullRebuilds(t *testing.T) {
	f := newReuseFixture(t)
	p1 := InitContext(f.env, nil, nil)
	vsKey := NewConfigKeys(ConfigKey{Kind: kind.VirtualService, Name: "a", Namespace: "default"})
	cases := []struct {
		name string
		req  *PushRequest
		mesh func()
		full bool
	}{
		{name: "forced", req: &PushRequest{Full: true, Forced: true, ConfigsUpdated: vsKey}, full: true},
		{name: "everything", req: &PushRequest{Full: true}, full: true},
		{name: "nil request", full: true},
		{name: "mesh config key", req: &PushRequest{Full: true, ConfigsUpdated: NewConfigKeys(ConfigKey{Kind: kind.MeshConfig, Name: "mesh"})}, full: true},
		{name: "mesh changed", req: &PushRequest{Full: true, ConfigsUpdated: vsKey}, full: true,
			mesh: func() { f.mesh = proto.Clone(p1.Mesh).(*meshconfig.MeshConfig); f.mesh.RootNamespace = "other" }},
		{name: "mesh copied, same content", req: &PushRequest{Full: true, ConfigsUpdated: vsKey}, full: false,
			mesh: func() { f.mesh = proto.Clone(p1.Mesh).(*meshconfig.MeshConfig) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.mesh = p1.Mesh
			if tc.mesh != nil {
				tc.mesh()
			}
			p := InitContext(f.env, p1, tc.req)
			if p.FullRebuild != tc.full {
				t.Fatalf("full = %v, want %v (rebuilt %v)", p.FullRebuild, tc.full, p.Rebuilt)
			}
			if tc.full && len(sameIndexes(p1, p)) != 0 {
				t.Errorf("full rebuild shared %v", sameIndexes(p1, p))
			}
			if tc.full && p.VirtualService("default", "b").Spec == p1.VirtualService("default", "b").Spec {
				t.Error("full rebuild reused a memoized VirtualService")
			}
		})
	}
}

func TestInitContextKeepsProblemsOfReusedIndexes(t *testing.T) {
	f := newReuseFixture(t)
	// VirtualService b routes nowhere known.
	f.put(gvk.VirtualService, "b", &networking.VirtualService{Hosts: []string{"ratings"}, Http: []*networking.HTTPRoute{{Route: []*networking.HTTPRouteDestination{{Destination: &networking.Destination{Host: "nowhere"}}}}}})
	p1 := InitContext(f.env, nil, nil)
	if len(p1.ProxyStatus()[MetricMissingRouteHost]) != 1 {
		t.Fatalf("problems = %v", p1.ProxyStatus())
	}
	p2 := InitContext(f.env, p1, &PushRequest{Full: true, ConfigsUpdated: NewConfigKeys(ConfigKey{Kind: kind.DestinationRule, Name: "dr", Namespace: "default"})})
	if len(p2.ProxyStatus()[MetricMissingRouteHost]) != 1 {
		t.Errorf("problem of a reused index lost: %v", p2.ProxyStatus())
	}
	p2.AddMetric(MetricNoService, "10.0.0.1", "pod.default", "no service")
	if len(p1.ProxyStatus()[MetricNoService]) != 0 || len(p2.ProxyStatus()[MetricNoService]) != 1 {
		t.Error("AddMetric must only affect its snapshot")
	}
}

// TestIndexesReadOnlyDeclaredKinds builds every index against a store that
// holds every kind, so an index listing an undeclared kind panics here.
func TestIndexesReadOnlyDeclaredKinds(t *testing.T) {
	for _, s := range indexSpecs {
		for _, d := range s.deps {
			if !slices.Contains(IndexNames()[:slices.Index(IndexNames(), s.name)], d) {
				t.Errorf("index %s depends on %s, which is built after it", s.name, d)
			}
		}
	}
	f := newReuseFixture(t)
	NewPushContext()
	_ = InitContext(f.env, nil, nil)
}
