package envoyfilter_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/envoyfilter"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ef is an EnvoyFilter with one NETWORK_FILTER INSERT_FIRST per name.
func ef(ns, name string, priority int32, created time.Time, values ...string) config.Config {
	spec := &networking.EnvoyFilter{Priority: priority}
	if len(values) == 0 {
		values = []string{name}
	}
	for _, v := range values {
		val, _ := structpb.NewStruct(map[string]any{"name": v})
		spec.ConfigPatches = append(spec.ConfigPatches, &networking.EnvoyFilter_EnvoyConfigObjectPatch{
			ApplyTo: networking.EnvoyFilter_NETWORK_FILTER,
			Patch:   &networking.EnvoyFilter_Patch{Operation: networking.EnvoyFilter_Patch_INSERT_FIRST, Value: val},
		})
	}
	return config.Config{Meta: config.Meta{GroupVersionKind: gvk.EnvoyFilter, Namespace: ns, Name: name, CreationTimestamp: created}, Spec: spec}
}

func refs(ps *envoyfilter.Patches) []string {
	var out []string
	for _, r := range ps.Refs() {
		out = append(out, fmt.Sprintf("%s/%s#%d", r.Namespace, r.Name, r.Index))
	}
	return out
}

// The order of the patches of one proxy, as Istio 1.31's
// PushContext.EnvoyFilters sorts them: priority across the root and the
// workload namespace; at equal priority the root namespace first; then
// creation time; then "name.namespace". (The EnvoyFilter reference and
// spec 003 §4.1 read "root namespace first, then priority": see order.)
func TestOrder(t *testing.T) {
	const root = "istio-system"
	cases := []struct {
		name    string
		filters []config.Config
		want    []string
	}{
		{
			name:    "root namespace first at equal priority, even when younger",
			filters: []config.Config{ef("ns", "old", 0, t0), ef(root, "young", 0, t0.Add(time.Hour))},
			want:    []string{"istio-system/young#0", "ns/old#0"},
		},
		{
			name:    "a workload filter of priority -5 before a root filter of priority 0",
			filters: []config.Config{ef(root, "base", 0, t0), ef("ns", "early", -5, t0.Add(time.Hour))},
			want:    []string{"ns/early#0", "istio-system/base#0"},
		},
		{
			name:    "priority before namespace",
			filters: []config.Config{ef(root, "root10", 10, t0), ef("ns", "ns0", 0, t0), ef(root, "root0", 0, t0), ef("ns", "neg", -1, t0)},
			want:    []string{"ns/neg#0", "istio-system/root0#0", "ns/ns0#0", "istio-system/root10#0"},
		},
		{
			name: "ties on priority: root namespace, then creation time, then name",
			filters: []config.Config{
				ef("ns", "b", 0, t0), ef("ns", "a", 0, t0), ef("ns", "old", 0, t0.Add(-time.Hour)),
				ef(root, "young", 0, t0.Add(time.Hour)), ef(root, "late", 1, t0.Add(-2*time.Hour)),
			},
			want: []string{"istio-system/young#0", "ns/old#0", "ns/a#0", "ns/b#0", "istio-system/late#0"},
		},
		{
			name:    "creation time",
			filters: []config.Config{ef("ns", "a", 0, t0.Add(2*time.Second)), ef("ns", "b", 0, t0), ef("ns", "c", 0, t0.Add(time.Second))},
			want:    []string{"ns/b#0", "ns/c#0", "ns/a#0"},
		},
		{
			name:    "name at equal creation time",
			filters: []config.Config{ef("ns", "zeta", 0, t0), ef("ns", "alpha", 0, t0), ef("ns", "mid", 0, t0)},
			want:    []string{"ns/alpha#0", "ns/mid#0", "ns/zeta#0"},
		},
		{
			name:    "patches of one filter in list order",
			filters: []config.Config{ef("ns", "multi", 0, t0, "x", "y", "z"), ef("ns", "after", 0, t0.Add(time.Second))},
			want:    []string{"ns/multi#0", "ns/multi#1", "ns/multi#2", "ns/after#0"},
		},
		{
			name:    "other namespaces do not apply",
			filters: []config.Config{ef("other", "x", -10, t0), ef("ns", "mine", 0, t0)},
			want:    []string{"ns/mine#0"},
		},
		{
			name:    "the proxy in the root namespace gets its filters once",
			filters: []config.Config{ef(root, "b", 0, t0), ef(root, "a", 0, t0)},
			want:    []string{"istio-system/a#0", "istio-system/b#0"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := "ns"
			if tc.name == "the proxy in the root namespace gets its filters once" {
				ns = root
			}
			filters := compileAll(t, tc.filters)
			// the input order must not matter
			for _, perm := range [][]*envoyfilter.Filter{filters, reversed(filters)} {
				if got := refs(envoyfilter.Select(sidecar(ns, nil), root, perm)); !slices.Equal(got, tc.want) {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func reversed[T any](s []T) []T {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// An update keeps the object's creation time, so it keeps its place; only
// a new object (deleted and created again) moves behind.
func TestOrderUpdateKeepsCreationTime(t *testing.T) {
	first, second := ef("ns", "first", 0, t0), ef("ns", "second", 0, t0.Add(time.Minute))
	updated := ef("ns", "first", 0, t0, "first-v2")
	updated.ResourceVersion = "2"
	recreated := ef("ns", "first", 0, t0.Add(time.Hour), "first-v3")
	for _, tc := range []struct {
		name  string
		first config.Config
		want  []string
	}{
		{"original", first, []string{"ns/first#0", "ns/second#0"}},
		{"updated", updated, []string{"ns/first#0", "ns/second#0"}},
		{"recreated", recreated, []string{"ns/second#0", "ns/first#0"}},
	} {
		got := refs(envoyfilter.Select(sidecar("ns", nil), "istio-system", compileAll(t, []config.Config{tc.first, second})))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestKey(t *testing.T) {
	sel := ef("ns", "sel", 0, t0)
	sel.Spec.(*networking.EnvoyFilter).WorkloadSelector = &networking.WorkloadSelector{Labels: map[string]string{"app": "a"}}
	versioned := ef("ns", "versioned", 0, t0)
	versioned.Spec.(*networking.EnvoyFilter).ConfigPatches[0].Match = &networking.EnvoyFilter_EnvoyConfigObjectMatch{
		Proxy: &networking.EnvoyFilter_ProxyMatch{ProxyVersion: `^1\.31`}}
	filters := compileAll(t, []config.Config{ef("ns", "all", 0, t0), sel, versioned})
	key := func(p *model.Proxy) string { return envoyfilter.Select(p, "istio-system", filters).Key() }

	a1, a2 := sidecar("ns", map[string]string{"app": "a", "pod": "1"}), sidecar("ns", map[string]string{"app": "a", "pod": "2"})
	b := sidecar("ns", map[string]string{"app": "b"})
	old := sidecar("ns", map[string]string{"app": "a"})
	old.Metadata.IstioVersion = "1.30.0"
	if key(a1) == "" || key(a1) != key(a2) {
		t.Errorf("proxies with the same patches: keys %q and %q, want equal and set", key(a1), key(a2))
	}
	if key(a1) == key(b) {
		t.Error("a proxy the selector leaves out has the same key")
	}
	if key(a1) == key(old) {
		t.Error("a proxy the version match leaves out has the same key")
	}
	router := sidecar("ns", map[string]string{"app": "a"})
	router.Type = model.Router
	if key(a1) == key(router) {
		t.Error("a router (GATEWAY context) has the same key as a sidecar")
	}
	// the spec is part of the key: an update changes it
	changed := compileAll(t, []config.Config{ef("ns", "all", 0, t0, "other"), sel, versioned})
	if envoyfilter.Select(a1, "istio-system", changed).Key() == key(a1) {
		t.Error("an updated filter keeps the key")
	}
	none := envoyfilter.Select(sidecar("elsewhere", nil), "istio-system", filters)
	if none.Key() != "" || !none.Empty() || none.Len() != 0 {
		t.Errorf("no filter: key %q, empty %v", none.Key(), none.Empty())
	}
}

func TestSelectTargetRefs(t *testing.T) {
	gw := func(name string) *model.Proxy {
		p := sidecar("gw", map[string]string{"gateway.networking.k8s.io/gateway-name": name})
		p.Type = model.Router
		return p
	}
	withRefs := func(name string, refs ...*typev1beta1.PolicyTargetReference) config.Config {
		c := ef("gw", name, 0, t0)
		c.Spec.(*networking.EnvoyFilter).TargetRefs = refs
		return c
	}
	ref := func(group, kind, name, ns string) *typev1beta1.PolicyTargetReference {
		return &typev1beta1.PolicyTargetReference{Group: group, Kind: kind, Name: name, Namespace: ns}
	}
	const g = "gateway.networking.k8s.io"
	filters := compileAll(t, []config.Config{
		withRefs("web", ref(g, "Gateway", "web", "")),
		withRefs("web-ns", ref(g, "Gateway", "web", "gw")),
		withRefs("web-other-ns", ref(g, "Gateway", "web", "other")),
		withRefs("api", ref(g, "Gateway", "api", "")),
		withRefs("web-lowercase-kind", ref(g, "gateway", "web", "")),
		withRefs("web-no-group", ref("", "Gateway", "web", "")),
		withRefs("second-ref", ref(g, "Gateway", "api", ""), ref(g, "Gateway", "web", "")),
		ef("gw", "selector", 0, t0),
	})
	// "web-ns.gw" sorts before "web.gw"
	want := []string{"gw/second-ref#0", "gw/selector#0", "gw/web-ns#0", "gw/web#0"}
	if got := refs(envoyfilter.Select(gw("web"), "istio-system", filters)); !slices.Equal(got, want) {
		t.Errorf("gateway web: got %v, want %v", got, want)
	}
	// a sidecar ignores targetRefs filters; a waypoint takes no selector-based one
	if got := refs(envoyfilter.Select(sidecar("gw", nil), "istio-system", filters)); !slices.Equal(got, []string{"gw/selector#0"}) {
		t.Errorf("sidecar: got %v", got)
	}
	wp := gw("wp")
	wp.Type = model.Waypoint
	if got := refs(envoyfilter.Select(wp, "istio-system", filters)); len(got) != 0 {
		t.Errorf("waypoint: got %v, want none", got)
	}
}

func TestCompilerReusesConversions(t *testing.T) {
	var c envoyfilter.Compiler
	cfg := ef("ns", "a", 0, t0)
	w := &model.EnvoyFilterWrapper{Config: cfg, Spec: cfg.Spec.(*networking.EnvoyFilter)}
	f1 := c.Filter(1, w)
	if f2 := c.Filter(1, &model.EnvoyFilterWrapper{Config: cfg, Spec: w.Spec}); f2 != f1 {
		t.Error("same object, same snapshot: converted again")
	}
	if f2 := c.Filter(2, w); f2 != f1 {
		t.Error("same object, next snapshot: converted again")
	}
	upd := ef("ns", "a", 0, t0, "v2")
	if f3 := c.Filter(2, &model.EnvoyFilterWrapper{Config: upd, Spec: upd.Spec.(*networking.EnvoyFilter)}); f3 == f1 {
		t.Error("an updated object reuses the old conversion")
	}
	// not used by snapshots 3 and 4: dropped
	c.Filter(3, &model.EnvoyFilterWrapper{Config: upd, Spec: upd.Spec.(*networking.EnvoyFilter)})
	c.Filter(4, &model.EnvoyFilterWrapper{Config: upd, Spec: upd.Spec.(*networking.EnvoyFilter)})
	if f4 := c.Filter(4, w); f4 == f1 {
		t.Error("a conversion unused for two snapshots is still kept")
	}
}
