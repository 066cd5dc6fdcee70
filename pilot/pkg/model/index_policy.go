package model

import (
	typeapi "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// policyIndex holds the namespaced policies of one kind — Telemetry,
// PeerAuthentication, RequestAuthentication, AuthorizationPolicy or
// ProxyConfig — by namespace, oldest first. Policies in the root namespace
// apply mesh-wide. One instance per kind, so a change of one kind rebuilds
// only its index.
//
// Kinds: the one kind of the instance.
type policyIndex struct {
	indexBase
	kind        kind.Kind
	count       int
	root        string
	byNamespace map[string][]config.Config
}

func buildPolicyIndex(bc *buildContext, k kind.Kind) *policyIndex {
	x := &policyIndex{kind: k, root: bc.root, byNamespace: map[string][]config.Config{}}
	for _, cfg := range sortedByCreation(bc.list(k)) {
		x.byNamespace[cfg.Namespace] = append(x.byNamespace[cfg.Namespace], cfg)
		x.count++
	}
	return x
}

// selectorOf returns a policy's workload selector labels.
func selectorOf(spec any) map[string]string {
	if s, ok := spec.(interface {
		GetSelector() *typeapi.WorkloadSelector
	}); ok {
		return s.GetSelector().GetMatchLabels()
	}
	return nil
}

// targetRefsOf returns the targetRef and targetRefs of a policy.
func targetRefsOf(spec any) []targetRef {
	var out []targetRef
	add := func(r *typeapi.PolicyTargetReference) {
		if r != nil {
			out = append(out, targetRef{kind: r.GetKind(), name: r.GetName(), namespace: r.GetNamespace()})
		}
	}
	if s, ok := spec.(interface {
		GetTargetRef() *typeapi.PolicyTargetReference
	}); ok {
		add(s.GetTargetRef())
	}
	if s, ok := spec.(interface {
		GetTargetRefs() []*typeapi.PolicyTargetReference
	}); ok {
		for _, r := range s.GetTargetRefs() {
			add(r)
		}
	}
	return out
}

// policyScope says how a policy attaches to workloads.
type policyScope int

const (
	// scopeNamespace: no selector, no targetRef: the whole namespace (the
	// mesh, in the root namespace).
	scopeNamespace policyScope = iota
	// scopeWorkload: a selector or targetRefs.
	scopeWorkload
)

func scopeOf(cfg *config.Config) policyScope {
	if len(selectorOf(cfg.Spec)) > 0 || len(targetRefsOf(cfg.Spec)) > 0 {
		return scopeWorkload
	}
	return scopeNamespace
}

// selects reports whether a policy applies to the proxy: policies with
// targetRefs apply to the gateways they name, others by selector (none
// selects every workload).
func selects(cfg *config.Config, proxy *Proxy) bool {
	if refs := targetRefsOf(cfg.Spec); len(refs) > 0 {
		return targetRefsGateway(refs, cfg.Namespace, proxy)
	}
	return selectorMatches(selectorOf(cfg.Spec), proxy.Labels)
}

// forWorkload returns the policies that apply to the proxy: those of its
// namespace, then those of the root namespace, oldest first in each.
func (x *policyIndex) forWorkload(proxy *Proxy) []config.Config {
	if proxy == nil {
		return nil
	}
	var out []config.Config
	add := func(ns string) {
		for i, cfg := range x.byNamespace[ns] {
			if selects(&x.byNamespace[ns][i], proxy) {
				out = append(out, cfg)
			}
		}
	}
	add(proxy.ConfigNamespace)
	if proxy.ConfigNamespace != x.root {
		add(x.root)
	}
	return out
}

// oldestNamespaceWide returns the oldest namespace-wide policy of ns.
func (x *policyIndex) oldestNamespaceWide(ns string) *config.Config {
	for i := range x.byNamespace[ns] {
		if scopeOf(&x.byNamespace[ns][i]) == scopeNamespace {
			return &x.byNamespace[ns][i]
		}
	}
	return nil
}

// layered returns the root → namespace → workload policies of the proxy:
// the oldest mesh-wide (root namespace) policy, the oldest namespace-wide
// policy of the proxy's namespace, and the oldest workload policy of the
// proxy's namespace that selects it. Absent layers are nil.
func (x *policyIndex) layered(proxy *Proxy) LayeredPolicies {
	var out LayeredPolicies
	if proxy == nil {
		return out
	}
	out.Root = x.oldestNamespaceWide(x.root)
	if proxy.ConfigNamespace != x.root {
		out.Namespace = x.oldestNamespaceWide(proxy.ConfigNamespace)
	}
	for i := range x.byNamespace[proxy.ConfigNamespace] {
		cfg := &x.byNamespace[proxy.ConfigNamespace][i]
		if scopeOf(cfg) == scopeWorkload && selects(cfg, proxy) {
			out.Workload = cfg
			break
		}
	}
	return out
}

// LayeredPolicies are the policies of one kind that apply to a proxy, by
// level; a more specific level overrides a broader one. Each is nil when
// absent; all are read-only.
type LayeredPolicies struct {
	Root      *config.Config
	Namespace *config.Config
	Workload  *config.Config
}

// Telemetry returns the Telemetry resources of a proxy, root → namespace →
// workload (merged by the telemetry stage).
func (p *PushContext) Telemetry(proxy *Proxy) LayeredPolicies { return p.telemetry.layered(proxy) }

// ProxyConfigs returns the ProxyConfig resources of a proxy, root →
// namespace → workload (applied over the mesh defaultConfig in that order).
func (p *PushContext) ProxyConfigs(proxy *Proxy) LayeredPolicies {
	return p.proxyConfigs.layered(proxy)
}

// PeerAuthentications returns the PeerAuthentications that apply to the
// proxy: its namespace's, then the root namespace's, oldest first.
func (p *PushContext) PeerAuthentications(proxy *Proxy) []config.Config {
	return p.peerAuthentications.forWorkload(proxy)
}

// RequestAuthentications returns the RequestAuthentications that apply to
// the proxy: its namespace's, then the root namespace's, oldest first.
func (p *PushContext) RequestAuthentications(proxy *Proxy) []config.Config {
	return p.requestAuthentications.forWorkload(proxy)
}

// AuthorizationPolicies returns the AuthorizationPolicies that apply to the
// proxy: its namespace's, then the root namespace's, oldest first.
func (p *PushContext) AuthorizationPolicies(proxy *Proxy) []config.Config {
	return p.authorizationPolicies.forWorkload(proxy)
}

// PoliciesInNamespace returns the policies of kind k in namespace ns
// (Telemetry, PeerAuthentication, RequestAuthentication,
// AuthorizationPolicy or ProxyConfig; nil for other kinds).
func (p *PushContext) PoliciesInNamespace(k kind.Kind, ns string) []config.Config {
	for _, x := range []*policyIndex{p.telemetry, p.peerAuthentications, p.requestAuthentications, p.authorizationPolicies, p.proxyConfigs} {
		if x.kind == k {
			return x.byNamespace[ns]
		}
	}
	return nil
}
