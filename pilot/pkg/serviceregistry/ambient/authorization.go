package ambient

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	securityapi "istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/workloadapi/security"
)

// This file converts an AuthorizationPolicy into the L4 policy ztunnel
// enforces.

// convertAuthorizationPolicy is the policy ztunnel enforces for an
// AuthorizationPolicy: nil for policies bound by targetRefs (waypoints take
// them); nil with a message for actions ztunnel lacks and dry runs; rules
// with HTTP attributes are dropped (ALLOW) or widened (DENY), with a
// message.
func convertAuthorizationPolicy(root string, cfg config.Config, spec *securityapi.AuthorizationPolicy,
) (*security.Authorization, string) {
	dryRun := false
	if v := cfg.Annotations[annotationDryRun]; v != "" {
		var err error
		if dryRun, err = strconv.ParseBool(v); err != nil {
			scope.Warnf("AuthorizationPolicy %s/%s: invalid %s %q", cfg.Namespace, cfg.Name, annotationDryRun, v)
		}
	}
	if dryRun {
		return nil, fmt.Sprintf("found policy \"%s/%s\" using dry-run annotation, but support for ambient "+
			"dry-run authorizationPolicies isn't enabled", cfg.Namespace, cfg.Name)
	}
	if len(spec.TargetRefs) > 0 || spec.TargetRef != nil {
		return nil, ""
	}
	sc := security.Scope_WORKLOAD_SELECTOR
	if spec.Selector == nil {
		sc = security.Scope_NAMESPACE
		if cfg.Namespace == root {
			sc = security.Scope_GLOBAL
		}
	}
	action := security.Action_ALLOW
	boilerplate := "Within an ALLOW policy, rules matching HTTP attributes are omitted. " +
		"This will be more restrictive than requested."
	switch spec.Action {
	case securityapi.AuthorizationPolicy_ALLOW:
	case securityapi.AuthorizationPolicy_DENY:
		action = security.Action_DENY
		boilerplate = "DENY policy with HTTP attributes is enforced without the HTTP rules. " +
			"This will be more restrictive than requested."
	default:
		return nil, fmt.Sprintf("ztunnel does not support the %s action", spec.Action)
	}
	out := &security.Authorization{Name: cfg.Name, Namespace: cfg.Namespace, Scope: sc, Action: action}
	l7 := map[string]bool{}
	for _, r := range spec.Rules {
		rules, found := convertRule(action, r, cfg.Namespace)
		if rules != nil {
			out.Groups = append(out.Groups, &security.Group{Rules: rules})
		}
		for _, f := range found {
			l7[f] = true
		}
	}
	if len(l7) > 0 {
		return out, fmt.Sprintf("ztunnel does not support HTTP attributes (found: %s). In ambient mode you must "+
			"use a waypoint proxy to enforce HTTP rules. %s", strings.Join(slices.Sorted(maps.Keys(l7)), ", "), boilerplate)
	}
	return out, ""
}

func httpOperations(op *securityapi.Operation) []string {
	var out []string
	for _, f := range []struct {
		name string
		v    []string
	}{{"hosts", op.GetHosts()}, {"notHosts", op.GetNotHosts()}, {"methods", op.GetMethods()},
		{"notMethods", op.GetNotMethods()}, {"paths", op.GetPaths()}, {"notPaths", op.GetNotPaths()}} {
		if len(f.v) > 0 {
			out = append(out, f.name)
		}
	}
	return out
}

func httpSources(s *securityapi.Source) []string {
	var out []string
	for _, f := range []struct {
		name string
		v    []string
	}{{"remoteIpBlocks", s.GetRemoteIpBlocks()}, {"notRemoteIpBlocks", s.GetNotRemoteIpBlocks()},
		{"requestPrincipals", s.GetRequestPrincipals()}, {"notRequestPrincipals", s.GetNotRequestPrincipals()}} {
		if len(f.v) > 0 {
			out = append(out, f.name)
		}
	}
	return out
}

var l4When = map[string]bool{"source.ip": true, "source.namespace": true, "source.principal": true,
	"destination.ip": true, "destination.port": true}

// convertRule turns one rule into ztunnel rules (to, from, then one per
// condition) and lists the HTTP attributes found; an ALLOW rule with HTTP
// attributes never matches, so it is dropped.
func convertRule(action security.Action, r *securityapi.Rule, ns string) ([]*security.Rules, []string) {
	var found []string
	var to, from []*security.Match
	for _, t := range r.GetTo() {
		op := t.GetOperation()
		found = append(found, httpOperations(op)...)
		to = append(to, &security.Match{DestinationPorts: toPorts(op.GetPorts()), NotDestinationPorts: toPorts(op.GetNotPorts())})
	}
	for _, f := range r.GetFrom() {
		s := f.GetSource()
		found = append(found, httpSources(s)...)
		from = append(from, &security.Match{
			SourceIps:          toIPs(s.GetIpBlocks()),
			NotSourceIps:       toIPs(s.GetNotIpBlocks()),
			Namespaces:         toMatches(s.GetNamespaces()),
			NotNamespaces:      toMatches(s.GetNotNamespaces()),
			ServiceAccounts:    toServiceAccounts(s.GetServiceAccounts(), ns),
			NotServiceAccounts: toServiceAccounts(s.GetNotServiceAccounts(), ns),
			Principals:         toMatches(s.GetPrincipals()),
			NotPrincipals:      toMatches(s.GetNotPrincipals()),
		})
	}
	rules := []*security.Rules{}
	if len(to) > 0 {
		rules = append(rules, &security.Rules{Matches: to})
	}
	if len(from) > 0 {
		rules = append(rules, &security.Rules{Matches: from})
	}
	for _, w := range r.GetWhen() {
		if !l4When[w.Key] {
			found = append(found, w.Key)
		}
		m := &security.Match{}
		switch w.Key {
		case "source.namespace":
			m.Namespaces, m.NotNamespaces = toMatches(w.Values), toMatches(w.NotValues)
		case "source.principal":
			m.Principals, m.NotPrincipals = toMatches(w.Values), toMatches(w.NotValues)
		case "source.ip":
			m.SourceIps, m.NotSourceIps = toIPs(w.Values), toIPs(w.NotValues)
		case "destination.port":
			m.DestinationPorts, m.NotDestinationPorts = toPorts(w.Values), toPorts(w.NotValues)
		case "destination.ip":
			m.DestinationIps, m.NotDestinationIps = toIPs(w.Values), toIPs(w.NotValues)
		}
		rules = append(rules, &security.Rules{Matches: []*security.Match{m}})
	}
	if action == security.Action_ALLOW && len(found) > 0 {
		rules = nil
	}
	return rules, found
}

func toMatches(vs []string) []*security.StringMatch {
	out := make([]*security.StringMatch, 0, len(vs))
	for _, v := range vs {
		var m *security.StringMatch
		switch {
		case v == "*":
			m = presence()
		case strings.HasPrefix(v, "*"):
			m = &security.StringMatch{MatchType: &security.StringMatch_Suffix{Suffix: strings.TrimPrefix(v, "*")}}
		case strings.HasSuffix(v, "*"):
			m = &security.StringMatch{MatchType: &security.StringMatch_Prefix{Prefix: strings.TrimSuffix(v, "*")}}
		default:
			m = &security.StringMatch{MatchType: &security.StringMatch_Exact{Exact: v}}
		}
		out = append(out, m)
	}
	return out
}

func toServiceAccounts(vs []string, ns string) []*security.ServiceAccountMatch {
	out := make([]*security.ServiceAccountMatch, 0, len(vs))
	for _, v := range vs {
		if n, sa, ok := strings.Cut(v, "/"); ok {
			out = append(out, &security.ServiceAccountMatch{Namespace: n, ServiceAccount: sa})
		} else {
			out = append(out, &security.ServiceAccountMatch{Namespace: ns, ServiceAccount: v})
		}
	}
	return out
}

func toPorts(vs []string) []uint32 {
	out := make([]uint32, 0, len(vs))
	for _, v := range vs {
		p, err := strconv.ParseUint(v, 10, 32)
		if err != nil || p > 65535 {
			continue
		}
		out = append(out, uint32(p))
	}
	return out
}

func toIPs(vs []string) []*security.Address {
	out := make([]*security.Address, 0, len(vs))
	for _, v := range vs {
		var ip netip.Addr
		var bits int
		if strings.Contains(v, "/") {
			p, err := netip.ParsePrefix(v)
			if err != nil {
				continue
			}
			ip, bits = p.Addr(), p.Bits()
		} else {
			a, err := netip.ParseAddr(v)
			if err != nil {
				continue
			}
			ip, bits = a, a.BitLen()
		}
		out = append(out, &security.Address{Address: ip.AsSlice(), Length: uint32(bits)})
	}
	return out
}
