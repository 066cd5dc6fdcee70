package file_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pkg/log/logtest"
)

// An unknown field dropped is logged at WARN once per object and field:
// not again when the file is re-read for another change, again when it
// comes back after being removed.
func TestDroppedFieldWarnedOnce(t *testing.T) {
	logs := logtest.Capture(t)
	dir := t.TempDir()
	withField := strings.Replace(drA, "spec: {host: a}", "spec: {host: a, hostz: b}", 1)
	write(t, dir, "a.yaml", withField)
	s, r := newSource(t, dir, nil)
	s.Reload()
	r.next(t)
	warned := func() []string { return logs.Lines("WARN", "unknown field spec.hostz dropped") }
	if got := warned(); len(got) != 1 || !strings.Contains(got[0], filepath.Join(dir, "a.yaml")+":1 DestinationRule ns/a") {
		t.Fatalf("WARN lines %q", got)
	}
	s.Reload() // resync, unchanged
	write(t, dir, "a.yaml", withField+"---\n"+drB)
	s.Reload() // the file changes elsewhere
	r.next(t)
	if got := warned(); len(got) != 1 {
		t.Fatalf("warned again: %q", got)
	}
	write(t, dir, "a.yaml", drA+"---\n"+drB) // same objects: no event
	s.Reload()
	write(t, dir, "a.yaml", withField+"---\n"+drB)
	s.Reload()
	if got := warned(); len(got) != 2 {
		t.Fatalf("a field dropped again after a fix: WARN lines %q", got)
	}
}

// An object that was rejected and is fixed says so at INFO, once; so does a
// file whose unreadable document parses again.
func TestFixedObjectLoggedValidAgain(t *testing.T) {
	logs := logtest.Capture(t)
	dir := t.TempDir()
	badB := strings.Replace(drB, "spec: {host: b}", "spec: {host: [b]}", 1)
	write(t, dir, "x.yaml", drA+"---\n"+badB)
	s, r := newSource(t, dir, nil)
	s.Reload()
	r.next(t)
	if got := logs.Lines("WARN", "x.yaml:6 DestinationRule ns/b: rejected"); len(got) != 1 {
		t.Fatalf("rejection not logged: %s", logs)
	}
	write(t, dir, "x.yaml", drA+"---\n"+drB)
	s.Reload()
	r.next(t)
	s.Reload()
	if got := logs.Lines("INFO", "x.yaml: DestinationRule ns/b is valid again"); len(got) != 1 {
		t.Fatalf("INFO lines %q\n%s", got, logs)
	}

	write(t, dir, "y.yaml", drA+"---\nkind: [unclosed\n")
	s.Reload()
	write(t, dir, "y.yaml", drA)
	s.Reload()
	if got := logs.Lines("INFO", "y.yaml: every document is valid again"); len(got) != 1 {
		t.Fatalf("INFO lines %q", got)
	}
}
