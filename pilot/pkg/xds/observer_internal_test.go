package xds

import "testing"

func TestIstioLocality(t *testing.T) {
	for in, want := range map[string]string{
		"":            "",
		"r/z/s":       "r/z/s",
		"r/z/":        "r/z",
		"r//s":        "r",
		"r//":         "r",
		"/z/s":        "/z/s",
		"us-east/1/a": "us-east/1/a",
	} {
		if got := istioLocality(in); got != want {
			t.Errorf("istioLocality(%q) = %q, want %q", in, got, want)
		}
	}
}
