package bootstrap_test

import (
	"strings"
	"testing"
	"time"

	"github.com/meshplane/istiod/pkg/diag"
)

// The analysis of the bundled example finds one problem; /debug/warningz
// says since when, and the time stays while the problem does.
func TestWarningzAnalysisHasSince(t *testing.T) {
	srv := startFileServer(t)
	defer srv.Shutdown()
	// the analysis runs once the directory is read: wait for it
	deadline := time.Now().Add(30 * time.Second)
	find := func() diag.Problem {
		for {
			var problems []diag.Problem
			getJSON(t, "http://"+srv.HTTPAddr()+"/debug/warningz", &problems)
			for _, p := range problems {
				if p.Source == "analysis" && strings.Contains(p.Message, "[MP0001]") {
					return p
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no MP0001 analysis problem on warningz: %+v", problems)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	first := find()
	if first.Since.IsZero() {
		t.Fatalf("analysis problem without a time: %+v", first)
	}
	if again := find(); !again.Since.Equal(first.Since) {
		t.Errorf("since moved from %v to %v", first.Since, again.Since)
	}
}
