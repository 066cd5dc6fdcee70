package logtest_test

import (
	"testing"

	"github.com/meshplane/istiod/pkg/log"
	"github.com/meshplane/istiod/pkg/log/logtest"
)

func TestCaptureFiltersByLevelAndText(t *testing.T) {
	s := log.RegisterScope("logtest-test", "")
	b := logtest.Capture(t)
	s.Warnf("watch of %s failed", "ns/a")
	s.Errorf("watch of %s failed", "ns/b")
	s.Errorf("unrelated")
	if got := b.Lines("ERROR", "watch of", "ns/b"); len(got) != 1 {
		t.Errorf("ERROR lines naming ns/b: %q\nall: %s", got, b.String())
	}
	if got := b.Lines("ERROR", "ns/a"); len(got) != 0 {
		t.Errorf("ns/a was logged at WARN, got ERROR lines %q", got)
	}
	if got := b.Lines("WARN", "ns/a"); len(got) != 1 {
		t.Errorf("WARN lines naming ns/a: %q", got)
	}
}
