package model

import (
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// A snapshot remembers the snapshots it was derived from incrementally and
// the kinds changed since each; a full rebuild forgets them all.
func TestChangedOnlySince(t *testing.T) {
	f := newReuseFixture(t)
	update := func(old *PushContext, k kind.Kind) *PushContext {
		return InitContext(f.env, old, &PushRequest{Full: true, ConfigsUpdated: NewConfigKeys(ConfigKey{Kind: k, Name: "x", Namespace: "default"})})
	}
	routes := []kind.Kind{kind.VirtualService, kind.Gateway}
	p1 := InitContext(f.env, nil, nil)
	p2 := update(p1, kind.VirtualService)
	p3 := update(p2, kind.Gateway)
	p4 := update(p3, kind.DestinationRule)
	for _, tc := range []struct {
		name  string
		p     *PushContext
		since *PushContext
		kinds []kind.Kind
		want  bool
	}{
		{"one route change", p2, p1, routes, true},
		{"two route changes", p3, p1, routes, true},
		{"a kind not listed since", p3, p1, []kind.Kind{kind.VirtualService}, false},
		{"the last step only", p3, p2, []kind.Kind{kind.Gateway}, true},
		{"a rule changed", p4, p3, routes, false},
		{"a rule changed further back", p4, p1, routes, false},
		{"itself", p2, p2, routes, false},
		{"a later snapshot", p1, p2, routes, false},
	} {
		if got := tc.p.ChangedOnlySince(tc.since.Seq(), tc.kinds); got != tc.want {
			t.Errorf("%s: ChangedOnlySince = %v, want %v", tc.name, got, tc.want)
		}
	}

	full := InitContext(f.env, p3, &PushRequest{Full: true, Forced: true})
	if full.ChangedOnlySince(p3.Seq(), routes) || full.ChangedOnlySince(p1.Seq(), routes) {
		t.Error("a forced rebuild still claims its ancestors")
	}
	if p5 := update(full, kind.VirtualService); !p5.ChangedOnlySince(full.Seq(), routes) || p5.ChangedOnlySince(p3.Seq(), routes) {
		t.Error("after a full rebuild, the chain starts again from it")
	}

	// the lineage is bounded
	p := p1
	for range maxLineage + 4 {
		p = update(p, kind.VirtualService)
	}
	if len(p.lineage) != maxLineage || p.ChangedOnlySince(p1.Seq(), routes) {
		t.Errorf("lineage of %d entries reaches back %v", len(p.lineage), p.ChangedOnlySince(p1.Seq(), routes))
	}
}

// Warming computes the scope of every distinct proxy view once, and the
// proxies then get those scopes.
func TestWarmSidecarScopes(t *testing.T) {
	f := newReuseFixture(t)
	f.put(gvk.Sidecar, "selected", &networking.Sidecar{WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "x"}},
		Egress: []*networking.IstioEgressListener{{Hosts: []string{"./*"}}}})
	p := InitContext(f.env, nil, nil)
	var proxies []*Proxy
	for i := range 20 {
		proxies = append(proxies, &Proxy{Type: SidecarProxy, ConfigNamespace: []string{"default", "a", "b"}[i%3]})
	}
	proxies = append(proxies, &Proxy{Type: SidecarProxy, ConfigNamespace: "default", Labels: map[string]string{"app": "x"}})
	p.WarmSidecarScopes(proxies)
	if n := len(p.sidecars.scopes); n != 4 {
		t.Errorf("%d scopes computed, want 4 (three namespaces and the selected Sidecar)", n)
	}
	for k, ls := range p.sidecars.scopes {
		if ls.scope == nil {
			t.Errorf("scope %v not computed", k)
		}
	}
	for _, proxy := range proxies {
		k, _ := p.sidecars.keyFor(proxy)
		if sc := p.SidecarScope(proxy); sc != p.sidecars.scopes[k].scope {
			t.Errorf("proxy of %s got a scope other than the warmed one", proxy.ConfigNamespace)
		}
	}
	if got := p.SidecarScope(proxies[len(proxies)-1]).Name; got != "selected" {
		t.Errorf("the selected proxy's scope is %s", got)
	}
}
