package authz

import (
	"slices"
	"strings"
)

// trustDomains are the mesh's trust domain then its aliases. Identities of
// any of them are the same identity, so a policy naming one of them (or
// cluster.local, which always means "the local trust domain") gets a
// matcher for each.
type trustDomains []string

func newTrustDomains(o *Options) trustDomains {
	return append(trustDomains{o.trustDomain()}, o.Mesh.GetTrustDomainAliases()...)
}

// aliasMode says how trust domain aliases apply to an attribute's values.
type aliasMode int

const (
	noAliases aliasMode = iota
	// replaceAliases: values are principals <td>/ns/<ns>/sa/<sa>.
	replaceAliases
	// expandAliases: values are trust domains.
	expandAliases
)

// rewrite applies the aliases to the values of the conditions that need it,
// once per condition. (Istio 1.31 shares a when condition between the
// principals of every from entry and rewrites it once per entry, so with
// aliases and several from entries a when source.principal lists its
// principals repeatedly; the matches are the same, the duplicates are not
// reproduced.)
func (td trustDomains) rewrite(cs []condition) {
	for i := range cs {
		switch cs[i].attr.aliases {
		case replaceAliases:
			cs[i].values, cs[i].notValues = td.principals(cs[i].values), td.principals(cs[i].notValues)
		case expandAliases:
			cs[i].values, cs[i].notValues = td.expand(cs[i].values), td.expand(cs[i].notValues)
		}
	}
}

// principals returns the principals with, for each one naming a known trust
// domain or cluster.local, one principal per trust domain. Principals whose
// trust domain is * or that are not <td>/ns/<ns>/sa/<sa> stay as they are,
// and so do principals of unrelated trust domains.
func (td trustDomains) principals(ps []string) []string {
	if len(ps) == 0 {
		return ps
	}
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		parts := strings.Split(p, "/")
		if len(parts) != 5 || parts[0] == "*" {
			out = append(out, p)
			continue
		}
		own := parts[0]
		if own != defaultTrustDomain && !td.matches(own) {
			out = append(out, p)
			continue
		}
		var forAliases []string
		for _, d := range td {
			np := p
			// A wildcard trust domain in the policy (*-td) that covers this
			// one is kept as written.
			if !wildcardSuffix(d, own) {
				np = d + "/" + strings.Join(parts[1:], "/")
			}
			if !slices.Contains(forAliases, np) {
				forAliases = append(forAliases, np)
			}
		}
		out = append(out, forAliases...)
	}
	return out
}

// expand replaces each value equal to a known trust domain by all of them.
func (td trustDomains) expand(vs []string) []string {
	if len(vs) == 0 {
		return vs
	}
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if slices.Contains(td, v) {
			out = append(out, td...)
		} else {
			out = append(out, v)
		}
	}
	seen := make(map[string]bool, len(out))
	return slices.DeleteFunc(out, func(s string) bool {
		if seen[s] {
			return true
		}
		seen[s] = true
		return false
	})
}

// matches reports whether a trust domain of a principal (possibly with a
// leading or trailing *) and one of the mesh's (likewise) match each other.
func (td trustDomains) matches(own string) bool {
	for _, d := range td {
		if own == d || d == "*" || wildcardPrefix(own, d) || wildcardPrefix(d, own) ||
			wildcardSuffix(own, d) || wildcardSuffix(d, own) {
			return true
		}
	}
	return false
}

// wildcardPrefix: pattern is "<p>*" and s starts with <p>.
func wildcardPrefix(s, pattern string) bool {
	p, ok := strings.CutSuffix(pattern, "*")
	return ok && strings.HasPrefix(s, p)
}

// wildcardSuffix: pattern is "*<p>" and s ends with <p>.
func wildcardSuffix(s, pattern string) bool {
	p, ok := strings.CutPrefix(pattern, "*")
	return ok && strings.HasSuffix(s, p)
}
