package file_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/meshplane/istiod/pilot/pkg/config/file"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/log/logtest"
)

// outOfWatches is a watcher whose Add fails as inotify does when
// max_user_watches is exhausted, until ok is set; it never sends events.
type outOfWatches struct {
	ok    atomic.Bool
	added chan string // the paths Add watched
}

func (w *outOfWatches) Add(path string) error {
	if !w.ok.Load() {
		return fmt.Errorf("%s: %w", path, syscall.ENOSPC)
	}
	w.added <- path
	return nil
}
func (w *outOfWatches) Events() <-chan fsnotify.Event { return nil }
func (w *outOfWatches) Errors() <-chan error          { return nil }
func (w *outOfWatches) Close() error                  { return nil }

func watchProblems(b *diag.Board) []diag.Problem {
	var out []diag.Problem
	for _, p := range b.List() {
		if p.Source == "file-watch" {
			out = append(out, p)
		}
	}
	return out
}

// A directory that cannot be watched is logged at WARN once and listed on
// the problems board; the resync still picks up its changes, and the
// warning goes once the directory is watched.
func TestFailedWatchIsAWarningAndResyncHeals(t *testing.T) {
	logs := logtest.Capture(t)
	dir := t.TempDir()
	write(t, dir, "a.yaml", drA)
	board := diag.New(nil)
	w := &outOfWatches{added: make(chan string, 100)}
	s, err := file.New(file.Options{Dir: dir, Schemas: collections.Pilot, Problems: board, ResyncPeriod: 10 * time.Millisecond,
		NewWatcher: func() (file.Watcher, error) { return w, nil }})
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder()
	s.RegisterEventHandler(gvk.DestinationRule, r.handle)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { s.Run(stop); close(done) }()
	defer func() { close(stop); <-done }()

	// the tree is watched before the first read
	if ev := r.next(t); !strings.HasPrefix(ev, "add ns/a") {
		t.Fatalf("event %q", ev)
	}
	ps := watchProblems(board)
	if len(ps) != 1 || ps[0].Severity != diag.Warning || ps[0].Object != dir ||
		!strings.Contains(ps[0].Message, "no space left on device") || !strings.Contains(ps[0].Message, "periodic resync") {
		t.Fatalf("watch problems %+v", ps)
	}
	// without events, the resync reads a new file
	write(t, dir, "b.yaml", drB)
	if ev := r.next(t); !strings.HasPrefix(ev, "add ns/b") {
		t.Fatalf("event %q", ev)
	}
	// every resync retried the watch; the failure was logged once
	if got := logs.Lines("WARN", "cannot watch "+dir, "no space left on device"); len(got) != 1 {
		t.Errorf("want one WARN for the unwatched directory, got %d:\n%s", len(got), logs.String())
	}

	// watches are available again: the next resync watches the directory
	w.ok.Store(true)
	if p := <-w.added; p != dir {
		t.Fatalf("watched %s", p)
	}
	// a read that starts after the watch was added follows its report
	write(t, dir, "c.yaml", strings.ReplaceAll(drA, "name: a", "name: c"))
	if ev := r.next(t); !strings.HasPrefix(ev, "add ns/c") {
		t.Fatalf("event %q", ev)
	}
	if ps := watchProblems(board); len(ps) != 0 {
		t.Errorf("watch problems remain once watched: %+v", ps)
	}
}

// A watcher that cannot be created at all is reported the same way.
func TestNoWatcherIsAWarning(t *testing.T) {
	logs := logtest.Capture(t)
	dir := t.TempDir()
	write(t, dir, "a.yaml", drA)
	board := diag.New(nil)
	s, err := file.New(file.Options{Dir: dir, Schemas: collections.Pilot, Problems: board, ResyncPeriod: time.Hour,
		NewWatcher: func() (file.Watcher, error) { return nil, syscall.EMFILE }})
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder()
	s.RegisterEventHandler(gvk.DestinationRule, r.handle)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { s.Run(stop); close(done) }()
	defer func() { close(stop); <-done }()
	if ev := r.next(t); !strings.HasPrefix(ev, "add ns/a") {
		t.Fatalf("event %q", ev)
	}
	if ps := watchProblems(board); len(ps) != 1 || !strings.Contains(ps[0].Message, "too many open files") {
		t.Errorf("watch problems %+v", ps)
	}
	if got := logs.Lines("WARN", "cannot watch "+dir); len(got) != 1 {
		t.Errorf("want one WARN, got %d:\n%s", len(got), logs.String())
	}
}
