package model

import (
	"cmp"
	"slices"
	"strings"

	"github.com/meshplane/istiod/pkg/config/host"
)

// resolveServiceAliases gives each service the ExternalName services that
// name it (Attributes.Aliases), as Istio's resolveServiceAliases does: an
// alias of an alias counts for the service at the end of the chain, a
// loop for nothing; aliases are sorted by namespace, then hostname.
// Services with aliases are replaced by copies (registries share theirs);
// the others are left as they are.
func resolveServiceAliases(all []*Service) {
	raw := map[NamespacedHostname]string{}
	byHost := map[string]string{} // an ExternalName is not namespaced
	for _, s := range all {
		if s.Resolution == Alias && s.Attributes.ExternalName != "" {
			raw[NamespacedHostname{Hostname: s.Hostname, Namespace: s.Attributes.Namespace}] = s.Attributes.ExternalName
			byHost[s.Hostname] = s.Attributes.ExternalName
		}
	}
	if len(raw) == 0 {
		return
	}
	aliases := map[string][]NamespacedHostname{}
	for alias, target := range raw {
		seen := map[string]bool{alias.Hostname: true, target: true}
		for {
			next, isAlias := byHost[target]
			if !isAlias {
				aliases[target] = append(aliases[target], alias)
				break
			}
			if seen[next] {
				break // a loop: Kubernetes answers NXDOMAIN, so no service
			}
			seen[next] = true
			target = next
		}
	}
	for _, v := range aliases {
		slices.SortFunc(v, func(a, b NamespacedHostname) int {
			if r := strings.Compare(a.Namespace, b.Namespace); r != 0 {
				return r
			}
			return cmp.Compare(a.Hostname, b.Hostname)
		})
	}
	for i, s := range all {
		if a, ok := aliases[s.Hostname]; ok {
			c := s.ShallowCopy()
			c.Attributes.Aliases = a
			all[i] = c
		}
	}
}

// trimAliases keeps the aliases of a service that hosts, the imports that
// took the service, also import (Istio's matchingAliasService); s itself
// when it keeps them all.
func trimAliases(hosts []string, s *Service) *Service {
	if len(s.Attributes.Aliases) == 0 {
		return s
	}
	var kept []NamespacedHostname
	for _, a := range s.Attributes.Aliases {
		for _, imp := range hosts {
			if host.SubsetOf(a.Hostname, imp) {
				kept = append(kept, a)
				break
			}
		}
	}
	if len(kept) == len(s.Attributes.Aliases) {
		return s
	}
	c := s.ShallowCopy()
	c.Attributes.Aliases = kept
	return c
}

// importsOf are the imported hosts that take s: those of its namespace
// when they cover it, else those of any namespace (Istio's order).
func (h importedHosts) importsOf(s *Service) []string {
	for _, imp := range h[s.Attributes.Namespace] {
		if host.SubsetOf(s.Hostname, imp) {
			return h[s.Attributes.Namespace]
		}
	}
	return h["*"]
}
