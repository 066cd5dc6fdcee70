package model

import "github.com/meshplane/istiod/pkg/config/host"

// HostSubsetOf reports whether every name host a matches is matched by b
// ("a.example.com" ⊆ "*.example.com" ⊆ "*").
func HostSubsetOf(a, b string) bool { return host.SubsetOf(a, b) }

// HostMatches reports whether hosts a and b match a common name.
func HostMatches(a, b string) bool { return host.Matches(a, b) }
