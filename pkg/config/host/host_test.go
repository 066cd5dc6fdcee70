package host

import "testing"

func TestRelations(t *testing.T) {
	for _, c := range []struct {
		a, b            string
		subset, matches bool
	}{
		{"a.example.com", "a.example.com", true, true},
		{"a.example.com", "b.example.com", false, false},
		{"a.example.com", "*.example.com", true, true},
		{"*.example.com", "a.example.com", false, true},
		{"*.a.example.com", "*.example.com", true, true},
		{"*.example.com", "*.a.example.com", false, true},
		{"*.example.com", "*", true, true},
		{"*", "*.example.com", false, true},
		{"*.example.com", "*.example.org", false, false},
		{"example.com", "*.example.com", false, false},
		{"", "*", true, true},
	} {
		if got := SubsetOf(c.a, c.b); got != c.subset {
			t.Errorf("SubsetOf(%q, %q) = %v, want %v", c.a, c.b, got, c.subset)
		}
		if got := Matches(c.a, c.b); got != c.matches {
			t.Errorf("Matches(%q, %q) = %v, want %v", c.a, c.b, got, c.matches)
		}
	}
}
