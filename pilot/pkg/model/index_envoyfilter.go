package model

import (
	"cmp"
	"slices"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// EnvoyFilterWrapper is one EnvoyFilter as the patching stage needs it. It
// is shared and read-only.
type EnvoyFilterWrapper struct {
	// Config is the store object (read-only).
	Config config.Config
	// Spec is Config.Spec.
	Spec *networking.EnvoyFilter
	// Priority is spec.priority.
	Priority int32
}

// envoyFilterIndex holds EnvoyFilters by namespace, each namespace's list in
// patch order: priority ascending, then creation time, then name.namespace.
// A proxy gets the root namespace's filters and its own namespace's merged
// into one list in Istio's order (see EnvoyFilters).
//
// Kinds: EnvoyFilter.
type envoyFilterIndex struct {
	indexBase
	count       int
	byNamespace map[string][]*EnvoyFilterWrapper
}

func buildEnvoyFilterIndex(bc *buildContext) *envoyFilterIndex {
	x := &envoyFilterIndex{byNamespace: map[string][]*EnvoyFilterWrapper{}}
	var all []*EnvoyFilterWrapper
	for _, cfg := range bc.list(kind.EnvoyFilter) {
		spec, ok := cfg.Spec.(*networking.EnvoyFilter)
		if !ok {
			continue
		}
		all = append(all, &EnvoyFilterWrapper{Config: cfg, Spec: spec, Priority: spec.GetPriority()})
	}
	slices.SortStableFunc(all, compareEnvoyFilters)
	for _, w := range all {
		x.byNamespace[w.Config.Namespace] = append(x.byNamespace[w.Config.Namespace], w)
	}
	x.count = len(all)
	return x
}

// compareEnvoyFilters orders filters by priority, creation time, then
// "name.namespace".
func compareEnvoyFilters(a, b *EnvoyFilterWrapper) int {
	if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
		return c
	}
	if c := a.Config.CreationTimestamp.Compare(b.Config.CreationTimestamp); c != 0 {
		return c
	}
	return cmp.Compare(a.Config.Name+"."+a.Config.Namespace, b.Config.Name+"."+b.Config.Namespace)
}

// appliesTo reports whether the filter selects the proxy: by workload
// selector (none selects every proxy of the namespace), or, for filters
// attached with targetRefs, the gateway they name.
func (w *EnvoyFilterWrapper) appliesTo(proxy *Proxy) bool {
	if refs := w.Spec.GetTargetRefs(); len(refs) > 0 {
		tr := make([]targetRef, 0, len(refs))
		for _, r := range refs {
			tr = append(tr, targetRef{kind: r.GetKind(), name: r.GetName(), namespace: r.GetNamespace()})
		}
		return targetRefsGateway(tr, w.Config.Namespace, proxy)
	}
	return selectorMatches(w.Spec.GetWorkloadSelector().GetLabels(), proxy.Labels)
}

// EnvoyFilters returns the EnvoyFilters that apply to the proxy in patch
// order, as Istio 1.31's PushContext.EnvoyFilters orders them: the root
// namespace's and the proxy namespace's (once when they are the same)
// sorted together by priority ascending; at equal priority the root
// namespace's first; then creation time; then "name.namespace". A
// workload filter with a lower priority than a root one therefore comes
// before it, although the EnvoyFilter reference (and spec 003 §4.1) reads
// "root namespace first" (pkg/config/analysis warns, MP0004).
func (p *PushContext) EnvoyFilters(proxy *Proxy) []*EnvoyFilterWrapper {
	if proxy == nil {
		return nil
	}
	var out []*EnvoyFilterWrapper
	add := func(ns string) {
		for _, w := range p.envoyFilters.byNamespace[ns] {
			if w.appliesTo(proxy) {
				out = append(out, w)
			}
		}
	}
	if p.rootNamespace != "" {
		add(p.rootNamespace)
	}
	if proxy.ConfigNamespace != p.rootNamespace {
		add(proxy.ConfigNamespace)
		slices.SortFunc(out, func(a, b *EnvoyFilterWrapper) int { return compareForProxy(a, b, p.rootNamespace) })
	}
	return out
}

// compareForProxy is Istio's order of one proxy's EnvoyFilters: priority;
// at equal priority a root namespace filter before another namespace's;
// creation time; "name.namespace".
func compareForProxy(a, b *EnvoyFilterWrapper, rootNamespace string) int {
	if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
		return c
	}
	if an, bn := a.Config.Namespace, b.Config.Namespace; an != bn && (an == rootNamespace || bn == rootNamespace) {
		if an == rootNamespace {
			return -1
		}
		return 1
	}
	return compareEnvoyFilters(a, b)
}
