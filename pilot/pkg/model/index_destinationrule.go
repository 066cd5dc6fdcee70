package model

import (
	"maps"
	"slices"

	networking "istio.io/api/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// ConsolidatedDestRule is the DestinationRule a proxy uses for a host: one
// rule, or several rules for the same host merged (subsets appended, the
// oldest rule's traffic policy kept). It is shared and read-only.
type ConsolidatedDestRule struct {
	// exportTo is the raw exportTo set ("." kept), sorted; a rule with a
	// workload selector is exported to "." only.
	exportTo []string
	rule     *config.Config
	from     []types.NamespacedName
}

// Rule returns the merged rule (host resolved).
func (c *ConsolidatedDestRule) Rule() *config.Config {
	if c == nil {
		return nil
	}
	return c.rule
}

// Spec returns the merged rule's spec.
func (c *ConsolidatedDestRule) Spec() *networking.DestinationRule {
	if c == nil {
		return nil
	}
	return c.rule.Spec.(*networking.DestinationRule)
}

// From names the DestinationRules merged into this one, oldest first.
func (c *ConsolidatedDestRule) From() []types.NamespacedName {
	if c == nil {
		return nil
	}
	return c.from
}

type destRuleTable = hostTable[[]*ConsolidatedDestRule]

// destinationRuleIndex holds DestinationRules (hosts resolved) merged per
// host in three pools, as Istio looks them up: rules a namespace uses for
// itself (namespaceLocal), rules a namespace exports to others
// (exportedByNamespace), and rules of the root namespace exported to it
// only (rootLocal).
//
// Kinds: DestinationRule (and the Gateway API kinds translated into it).
type destinationRuleIndex struct {
	indexBase
	memo           objectMemo[*config.Config]
	count          int
	all            []*config.Config
	namespaceLocal map[string]*destRuleTable
	exported       map[string]*destRuleTable
	rootLocal      *destRuleTable
	root           string
}

func buildDestinationRuleIndex(bc *buildContext) *destinationRuleIndex {
	var prev objectMemo[*config.Config]
	if old, _ := bc.oldIndex().(*destinationRuleIndex); old != nil {
		prev = old.memo
	}
	raw := bc.list(kind.DestinationRule)
	x := &destinationRuleIndex{
		memo:           make(objectMemo[*config.Config], len(raw)),
		namespaceLocal: map[string]*destRuleTable{},
		exported:       map[string]*destRuleTable{},
		rootLocal:      newHostTable[[]*ConsolidatedDestRule](),
		root:           bc.root,
	}
	for i := range raw {
		cfg := &raw[i]
		if _, ok := cfg.Spec.(*networking.DestinationRule); !ok {
			continue
		}
		r, ok := prev.get(cfg)
		if !ok {
			c := cfg.DeepCopy()
			dr := c.Spec.(*networking.DestinationRule)
			dr.Host = resolveShortName(dr.Host, cfg.Namespace, bc.domainFor(cfg))
			r = &c
		}
		x.memo.put(cfg, r)
		x.all = append(x.all, r)
	}
	sortPtrsByCreation(x.all)
	x.count = len(x.all)
	defaults := bc.mesh.GetDefaultDestinationRuleExportTo()
	for _, cfg := range x.all {
		x.add(cfg, defaults)
	}
	return x
}

// add files one rule into the pools it belongs to.
func (x *destinationRuleIndex) add(cfg *config.Config, defaults []string) {
	dr := cfg.Spec.(*networking.DestinationRule)
	exportTo := []string{string(VisibilityPrivate)}
	if dr.GetWorkloadSelector() == nil {
		exportTo = slices.Compact(slices.Sorted(slices.Values(dr.ExportTo)))
	}
	has := func(v string) bool { return slices.Contains(exportTo, v) }
	ns := cfg.Namespace
	if len(exportTo) == 0 || has(string(VisibilityPublic)) || has(string(VisibilityPrivate)) || has(ns) {
		x.mergeInto(tableFor(x.namespaceLocal, ns), cfg, exportTo)
	}
	privateOnly := (len(exportTo) == 0 && slices.Contains(defaults, string(VisibilityPrivate))) ||
		(len(exportTo) == 1 && (has(string(VisibilityPrivate)) || has(ns)))
	switch {
	case !privateOnly:
		x.mergeInto(tableFor(x.exported, ns), cfg, exportTo)
	case ns == x.root:
		x.mergeInto(x.rootLocal, cfg, exportTo)
	}
}

func tableFor(m map[string]*destRuleTable, ns string) *destRuleTable {
	t := m[ns]
	if t == nil {
		t = newHostTable[[]*ConsolidatedDestRule]()
		m[ns] = t
	}
	return t
}

// mergeInto merges cfg with the rules already filed for its host. Rules
// merge when their exportTo sets are equal (or the new one's is a superset,
// in which case it is also kept on its own) and their workload selectors
// are both absent or equal; a rule with a selector is also kept on its own.
func (x *destinationRuleIndex) mergeInto(t *destRuleTable, cfg *config.Config, exportTo []string) {
	rule := cfg.Spec.(*networking.DestinationRule)
	host := rule.Host
	existing, ok := t.get(host)
	if !ok {
		t.set(host, []*ConsolidatedDestRule{newConsolidated(cfg, exportTo)})
		return
	}
	appendSeparately := true
	for _, mdr := range existing {
		switch {
		case slices.Equal(exportTo, mdr.exportTo):
			appendSeparately = false
		case len(mdr.exportTo) > 0 && isSuperset(exportTo, mdr.exportTo):
			appendSeparately = true
		default:
			appendSeparately = true
			continue
		}
		prevRule := mdr.Spec()
		bothWithout := rule.GetWorkloadSelector() == nil && prevRule.GetWorkloadSelector() == nil
		bothWith := rule.GetWorkloadSelector() != nil && prevRule.GetWorkloadSelector() != nil
		same := maps.Equal(rule.GetWorkloadSelector().GetMatchLabels(), prevRule.GetWorkloadSelector().GetMatchLabels())
		if bothWith && !same {
			appendSeparately = true
			continue
		}
		if bothWithout || (bothWith && same) {
			appendSeparately = false
		}
		x.mergeRule(mdr, cfg)
	}
	if appendSeparately {
		t.set(host, append(existing, newConsolidated(cfg, exportTo)))
	}
}

// mergeRule merges cfg into mdr: mdr gets a copy of its rule with cfg's new
// subsets appended and cfg's traffic policy when it has none.
func (x *destinationRuleIndex) mergeRule(mdr *ConsolidatedDestRule, cfg *config.Config) {
	rule := cfg.Spec.(*networking.DestinationRule)
	copied := mdr.rule.DeepCopy()
	merged := copied.Spec.(*networking.DestinationRule)
	mdr.rule = &copied
	mdr.from = append(slices.Clip(mdr.from), nameOf(cfg))
	names := make(map[string]struct{}, len(merged.Subsets))
	for _, s := range merged.Subsets {
		names[s.Name] = struct{}{}
	}
	for _, s := range rule.Subsets {
		if _, dup := names[s.Name]; dup {
			x.addProblem(MetricDuplicatedSubsets, rule.Host,
				"Duplicate subset %s found while merging destination rules for %s (%s ignored for it)", s.Name, rule.Host, nameOf(cfg))
			continue
		}
		merged.Subsets = append(merged.Subsets, s)
	}
	if merged.TrafficPolicy == nil && rule.TrafficPolicy != nil {
		merged.TrafficPolicy = rule.TrafficPolicy
	}
}

func newConsolidated(cfg *config.Config, exportTo []string) *ConsolidatedDestRule {
	return &ConsolidatedDestRule{exportTo: exportTo, rule: cfg, from: []types.NamespacedName{nameOf(cfg)}}
}

func isSuperset(a, b []string) bool {
	for _, v := range b {
		if !slices.Contains(a, v) {
			return false
		}
	}
	return true
}

// forService returns the rules a proxy in proxyNS uses for svc, looked up
// in order: rules of the proxy's namespace (the root namespace's own pool
// for a proxy there), rules the service's namespace exports to the proxy,
// rules the root namespace exports to it.
func (x *destinationRuleIndex) forService(proxyNS string, svc *Service, services *serviceIndex) []*ConsolidatedDestRule {
	if svc == nil {
		return nil
	}
	if proxyNS != x.root {
		if _, drs, ok := x.namespaceLocal[proxyNS].lookup(svc.Hostname); ok {
			return drs
		}
	} else if _, drs, ok := x.rootLocal.lookup(svc.Hostname); ok {
		return drs
	}
	svcNS := svc.Attributes.Namespace
	if svcNS == "" && services != nil {
		if s := services.forHostname(svc.Hostname, proxyNS); s != nil {
			svcNS = s.Attributes.Namespace
		}
	}
	if svcNS != "" {
		if out := x.exportedFrom(svcNS, svc.Hostname, proxyNS); out != nil {
			return out
		}
	}
	return x.exportedFrom(x.root, svc.Hostname, proxyNS)
}

// exportedFrom returns the rules namespace owner exports to client for
// host.
func (x *destinationRuleIndex) exportedFrom(owner, host, client string) []*ConsolidatedDestRule {
	_, drs, ok := x.exported[owner].lookup(host)
	if !ok {
		return nil
	}
	var out []*ConsolidatedDestRule
	for _, dr := range drs {
		if len(dr.exportTo) == 0 || slices.Contains(dr.exportTo, string(VisibilityPublic)) || slices.Contains(dr.exportTo, client) {
			out = append(out, dr)
		}
	}
	return out
}

// DestinationRuleForService returns the rules a proxy in proxyNS uses for
// svc: several when rules with workload selectors apply (see
// SidecarScope.DestinationRule to pick one for a proxy), nil when none.
func (p *PushContext) DestinationRuleForService(proxyNS string, svc *Service) []*ConsolidatedDestRule {
	return p.destinationRules.forService(proxyNS, svc, p.services)
}

// DestinationRule returns the rules a proxy in proxyNS uses for hostname,
// resolving the hostname to the service the proxy sees (own namespace
// first); a hostname no registry knows still finds rules by host.
func (p *PushContext) DestinationRule(proxyNS, hostname string) []*ConsolidatedDestRule {
	svc := p.services.forHostname(hostname, proxyNS)
	if svc == nil {
		svc = &Service{Hostname: hostname}
	}
	return p.destinationRules.forService(proxyNS, svc, p.services)
}

// DestinationRules returns every DestinationRule, hosts resolved, oldest
// first, unmerged (shared, read-only).
func (p *PushContext) DestinationRules() []*config.Config { return p.destinationRules.all }
