package model

import (
	"net/netip"
	"strings"

	"github.com/meshplane/istiod/pkg/config/host"
)

// hostTable and resolveShortName serve the lookups of hosts; the relations
// between them are in pkg/config/host.

// hostTable maps exact and wildcard hosts to values, with the most-specific
// match Istio uses: an exact entry first, else the longest wildcard that
// covers the host.
type hostTable[T any] struct {
	exact    map[string]T
	wildcard map[string]T
}

func newHostTable[T any]() *hostTable[T] {
	return &hostTable[T]{exact: map[string]T{}, wildcard: map[string]T{}}
}

func (t *hostTable[T]) table(h string) map[string]T {
	if host.IsWildcard(h) {
		return t.wildcard
	}
	return t.exact
}

// get returns the value stored under exactly h.
func (t *hostTable[T]) get(h string) (T, bool) {
	v, ok := t.table(h)[h]
	return v, ok
}

func (t *hostTable[T]) set(h string, v T) { t.table(h)[h] = v }

// lookup returns the most specific entry covering h.
func (t *hostTable[T]) lookup(h string) (string, T, bool) {
	if t == nil {
		var zero T
		return "", zero, false
	}
	if v, ok := t.exact[h]; ok {
		return h, v, true
	}
	if v, ok := t.wildcard[h]; ok {
		return h, v, true
	}
	best, found := "", false
	for k := range t.wildcard {
		if host.SubsetOf(h, k) && (!found || len(k) > len(best) || (len(k) == len(best) && k < best)) {
			best, found = k, true
		}
	}
	if !found {
		var zero T
		return "", zero, false
	}
	return best, t.wildcard[best], true
}

// resolveShortName completes a host written in namespace ns: a name without
// a dot becomes name.ns.svc.<domain>; wildcards, IP addresses and names with
// a dot are kept as written. domain is the config's own Domain, else the
// cluster domain.
func resolveShortName(h, ns, domain string) string {
	if h == "" || h == "*" || strings.Contains(h, ".") {
		return h
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return h
	}
	out := h
	if ns != "" {
		out += "." + ns
	}
	if domain != "" {
		out += ".svc." + domain
	}
	return out
}
