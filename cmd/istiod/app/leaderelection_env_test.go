package app

import (
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
)

// ENABLE_LEADER_ELECTION (default true): false disables every election;
// a value that is not a boolean is refused at start.
func TestLeaderElectionFromEnv(t *testing.T) {
	for _, c := range []struct {
		env               string
		disabled, wantErr bool
	}{
		{"", false, false},
		{"true", false, false},
		{"false", true, false},
		{"0", true, false},
		{"maybe", false, true},
	} {
		t.Setenv("ENABLE_LEADER_ELECTION", c.env)
		a := bootstrap.DefaultArgs()
		err := securityFromEnv(&a.Security)
		if (err != nil) != c.wantErr {
			t.Errorf("%q: error %v", c.env, err)
			continue
		}
		if got := a.Security.LeaderElection.Disabled; !c.wantErr && got != c.disabled {
			t.Errorf("%q: disabled %v, want %v", c.env, got, c.disabled)
		}
	}
}
