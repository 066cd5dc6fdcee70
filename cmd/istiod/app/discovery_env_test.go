package app

import (
	"testing"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// PILOT_XDS_SEND_TIMEOUT bounds each send to a proxy: default on, 0 turns
// it off, and a value that is not a duration is refused at start.
func TestSendTimeoutFromEnv(t *testing.T) {
	for _, c := range []struct {
		env     string
		want    time.Duration
		wantErr bool
	}{
		{"", xds.DefaultSendTimeout, false},
		{"5s", 5 * time.Second, false},
		{"0s", 0, false},
		{"soon", 0, true},
		{"-1s", 0, true},
	} {
		t.Setenv("PILOT_XDS_SEND_TIMEOUT", c.env)
		a := bootstrap.DefaultArgs()
		err := debounceFromEnv(&a)
		if (err != nil) != c.wantErr {
			t.Errorf("%q: error %v", c.env, err)
			continue
		}
		if !c.wantErr && a.SendTimeout != c.want {
			t.Errorf("%q: timeout %v, want %v", c.env, a.SendTimeout, c.want)
		}
	}
}
