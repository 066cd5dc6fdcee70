// Package host holds the relations Istio uses between the host names of
// its configuration: exact names ("reviews.default.svc.cluster.local") and
// wildcards with a leading "*" ("*.example.com", "*").
package host

import "strings"

// IsWildcard reports whether h is a wildcard host.
func IsWildcard(h string) bool { return strings.HasPrefix(h, "*") }

// SubsetOf reports whether every name matched by a is matched by b:
// "a.example.com" ⊆ "*.example.com" ⊆ "*", but not the other way round.
func SubsetOf(a, b string) bool {
	switch {
	case !IsWildcard(b):
		return a == b
	case !IsWildcard(a):
		return strings.HasSuffix(a, b[1:])
	default:
		return strings.HasSuffix(a[1:], b[1:])
	}
}

// Matches reports whether a and b match some common name (either is a
// subset of the other): the bidirectional matching of VirtualService hosts.
func Matches(a, b string) bool { return SubsetOf(a, b) || SubsetOf(b, a) }
