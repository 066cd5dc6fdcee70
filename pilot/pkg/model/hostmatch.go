package model

// HostSubsetOf reports whether every name host a matches is matched by b
// ("a.example.com" ⊆ "*.example.com" ⊆ "*").
func HostSubsetOf(a, b string) bool { return hostSubsetOf(a, b) }

// HostMatches reports whether hosts a and b match a common name.
func HostMatches(a, b string) bool { return hostMatches(a, b) }
