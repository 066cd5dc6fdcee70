package model

import (
	"cmp"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pkg/config"
)

// This file holds what several indexes share: exportTo visibility, label
// selectors, the creation-time order Istio uses to break ties, and the memo
// that lets an incremental rebuild skip objects that did not change.

// exportSet is a resolved exportTo list: public, exported to nobody, or to a
// set of namespaces ("." already replaced by the owner's namespace).
type exportSet struct {
	public     bool
	namespaces map[string]struct{}
}

// newExportSet resolves an exportTo list of an object in namespace owner;
// an empty list takes the mesh defaults, and empty defaults mean public.
// "*" wins over everything, then "~" (nobody) over namespaces.
func newExportSet(values []string, owner string, defaults []string) exportSet {
	if len(values) == 0 {
		values = defaults
	}
	if len(values) == 0 || slices.Contains(values, string(VisibilityPublic)) {
		return exportSet{public: true}
	}
	if slices.Contains(values, string(VisibilityNone)) {
		return exportSet{}
	}
	out := exportSet{namespaces: make(map[string]struct{}, len(values))}
	for _, v := range values {
		if v == string(VisibilityPrivate) {
			v = owner
		}
		out.namespaces[v] = struct{}{}
	}
	return out
}

// exportSetOf resolves a service's ExportTo the same way.
func exportSetOf(e ExportTo, owner string, defaults []string) exportSet {
	if len(e) == 0 {
		return newExportSet(nil, owner, defaults)
	}
	values := make([]string, 0, len(e))
	for v := range e {
		values = append(values, string(v))
	}
	return newExportSet(values, owner, defaults)
}

// visibleTo reports whether a proxy in namespace ns may see the object.
func (e exportSet) visibleTo(ns string) bool {
	if e.public {
		return true
	}
	_, ok := e.namespaces[ns]
	return ok
}

// none reports whether nobody sees the object.
func (e exportSet) none() bool { return !e.public && len(e.namespaces) == 0 }

// overlaps reports whether some namespace sees both objects.
func (e exportSet) overlaps(o exportSet) bool {
	if e.none() || o.none() {
		return false
	}
	if e.public || o.public {
		return true
	}
	for ns := range e.namespaces {
		if _, ok := o.namespaces[ns]; ok {
			return true
		}
	}
	return false
}

// selectorMatches reports whether a workload with labels is selected by
// selector: every selector label is present with the same value. An empty
// selector selects every workload.
func selectorMatches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	return true
}

// compareByCreation orders configs as Istio does when several compete:
// oldest first, then by name, then by namespace.
func compareByCreation(a, b *config.Config) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return cmp.Compare(a.Namespace, b.Namespace)
}

// sortedByCreation returns a sorted copy of configs (store slices are
// shared and never sorted in place). Configs are large values, so the sort
// permutes indexes and copies each config once.
func sortedByCreation(configs []config.Config) []config.Config {
	order := make([]int, len(configs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return compareByCreation(&configs[a], &configs[b]) })
	out := make([]config.Config, len(configs))
	for i, j := range order {
		out[i] = configs[j]
	}
	return out
}

// sortPtrsByCreation sorts configs in place, oldest first (the order is
// total: names are unique per kind).
func sortPtrsByCreation(configs []*config.Config) {
	slices.SortFunc(configs, compareByCreation)
}

func nameOf(c *config.Config) types.NamespacedName {
	return types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
}

// objectMemo remembers what a build derived from each store object. Store
// objects are immutable, so an object with the same spec pointer and
// resource version as last time is the same object and its derived value
// can be reused; anything else is derived again.
type objectMemo[T any] map[types.NamespacedName]memoEntry[T]

type memoEntry[T any] struct {
	spec proto.Message
	rv   string
	val  T
}

// get returns the value derived from cfg last time, if cfg is unchanged.
func (m objectMemo[T]) get(cfg *config.Config) (T, bool) {
	var zero T
	if m == nil {
		return zero, false
	}
	e, ok := m[nameOf(cfg)]
	if !ok {
		return zero, false
	}
	spec, isProto := cfg.Spec.(proto.Message)
	if !isProto || e.spec != spec || e.rv != cfg.ResourceVersion {
		return zero, false
	}
	return e.val, true
}

// put remembers the value derived from cfg.
func (m objectMemo[T]) put(cfg *config.Config, v T) {
	if spec, ok := cfg.Spec.(proto.Message); ok {
		m[nameOf(cfg)] = memoEntry[T]{spec: spec, rv: cfg.ResourceVersion, val: v}
	}
}

// targetRefsGateway reports whether a policy attached by targetRef(s)
// applies to a proxy: only a gateway proxy whose gateway-name label names a
// targeted Gateway in the policy's namespace.
func targetRefsGateway(refs []targetRef, policyNamespace string, proxy *Proxy) bool {
	if proxy == nil || proxy.ConfigNamespace != policyNamespace {
		return false
	}
	name := proxy.Labels[gatewayNameLabel]
	if name == "" {
		return false
	}
	for _, r := range refs {
		if strings.EqualFold(r.kind, "Gateway") && r.name == name &&
			(r.namespace == "" || r.namespace == policyNamespace) {
			return true
		}
	}
	return false
}

// gatewayNameLabel is set on gateway pods deployed for a Gateway API
// Gateway.
const gatewayNameLabel = "gateway.networking.k8s.io/gateway-name"

// targetRef is the part of a PolicyTargetReference attachment needs.
type targetRef struct {
	kind, name, namespace string
}
