package bootstrap

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// The CA directory is a function of the environment the command read:
// ISTIOD_CA_DIR, else Istio's path in a cluster, else the user's state
// directory (XDG_STATE_HOME, ~/.local/state, the user cache directory),
// never the working directory without a cluster.
func TestCADirFromEnvironment(t *testing.T) {
	cache := func() (string, error) { return "/cache", nil }
	noCache := func() (string, error) { return "", errors.New("no cache") }
	for _, tc := range []struct {
		name    string
		env     map[string]string
		cache   func() (string, error)
		cluster bool
		want    string
	}{
		{"explicit", map[string]string{"ISTIOD_CA_DIR": "/srv/ca", "HOME": "/home/u"}, cache, false, "/srv/ca"},
		{"explicit in a cluster", map[string]string{"ISTIOD_CA_DIR": "/srv/ca"}, cache, true, "/srv/ca"},
		{"cluster keeps Istio's path", map[string]string{"HOME": "/home/u", "XDG_STATE_HOME": "/state"}, cache, true, "./var/run/secrets/istiod/ca"},
		{"XDG_STATE_HOME", map[string]string{"HOME": "/home/u", "XDG_STATE_HOME": "/state"}, cache, false, "/state/istiod/ca"},
		{"relative XDG_STATE_HOME is ignored", map[string]string{"HOME": "/home/u", "XDG_STATE_HOME": "state"}, cache, false, "/home/u/.local/state/istiod/ca"},
		{"HOME", map[string]string{"HOME": "/home/u"}, cache, false, "/home/u/.local/state/istiod/ca"},
		{"user cache dir", map[string]string{}, cache, false, "/cache/istiod/ca"},
		{"nothing known", map[string]string{}, noCache, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			// what the command does with the environment
			o := SecurityOptions{CADir: getenv("ISTIOD_CA_DIR"), StateDir: UserStateDir(getenv, tc.cache)}
			got, from, err := caDir(o, tc.cluster)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), "ISTIOD_CA_DIR") {
					t.Fatalf("got %q, %v; want an error naming ISTIOD_CA_DIR", got, err)
				}
				return
			}
			if err != nil || got != filepath.FromSlash(tc.want) || from == "" {
				t.Fatalf("got %q (%s), %v; want %q", got, from, err, tc.want)
			}
		})
	}
}
