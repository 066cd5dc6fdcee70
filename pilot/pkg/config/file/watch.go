package file

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/meshplane/istiod/pkg/diag"
)

// Watcher is what the source needs of a file watcher: fsnotify's by
// default (Options.NewWatcher replaces it, e.g. in tests).
type Watcher interface {
	// Add watches one directory (not its subdirectories).
	Add(path string) error
	// Events and Errors are read by the source's Run goroutine only.
	Events() <-chan fsnotify.Event
	Errors() <-chan error
	Close() error
}

// fsWatcher is fsnotify's watcher as a Watcher.
type fsWatcher struct{ w *fsnotify.Watcher }

func newFSWatcher() (Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	return fsWatcher{w}, nil
}

func (f fsWatcher) Add(path string) error         { return f.w.Add(path) }
func (f fsWatcher) Events() <-chan fsnotify.Event { return f.w.Events }
func (f fsWatcher) Errors() <-chan error          { return f.w.Errors }
func (f fsWatcher) Close() error                  { return f.w.Close() }

// watchProblemSource is the warningz source of directories not watched.
const watchProblemSource = "file-watch"

// watching is the Run goroutine's watch of the tree: the watcher (nil when
// it cannot be created) and what could not be watched, by path. What is not
// watched is logged at WARN when it starts failing and listed on
// /debug/warningz until it is watched: its changes arrive only with the
// periodic resync. Only the Run goroutine uses it.
type watching struct {
	s       *Source
	w       Watcher
	newErr  string            // why the watcher cannot be created ("" when it exists)
	failing map[string]string // directory -> why it is not watched
}

// ensure creates the watcher if it does not exist yet and (re)walks the
// tree when some directory is not watched or walk is set; it reports
// whether a watcher exists.
func (ws *watching) ensure(walk bool) bool {
	if ws.w == nil {
		w, err := ws.s.opts.NewWatcher()
		if err != nil {
			if msg := err.Error(); msg != ws.newErr {
				ws.newErr = msg
				scope.Warnf("cannot watch %s (%v); relying on the periodic resync every %v", ws.s.opts.Dir, err, ws.s.opts.ResyncPeriod)
			}
			ws.report()
			return false
		}
		ws.w, ws.newErr, walk = w, "", true
	}
	if walk || len(ws.failing) > 0 {
		ws.walk()
	}
	return true
}

// walk adds a watch on the directory and every subdirectory.
func (ws *watching) walk() {
	failing := map[string]string{}
	_ = filepath.WalkDir(ws.s.opts.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if path != ws.s.opts.Dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if err := ws.w.Add(path); err != nil {
			failing[path] = err.Error()
			if ws.failing[path] != err.Error() {
				scope.Warnf("cannot watch %s (%v); its changes are picked up by the periodic resync every %v", path, err, ws.s.opts.ResyncPeriod)
			}
		} else if _, was := ws.failing[path]; was {
			scope.Infof("watching %s again", path)
		}
		return nil
	})
	ws.failing = failing
	ws.report()
}

// report replaces the watch problems of the directory on the board.
func (ws *watching) report() {
	b := ws.s.opts.Problems
	if b == nil {
		return
	}
	resync := fmt.Sprintf("changes are picked up only by the periodic resync every %v", ws.s.opts.ResyncPeriod)
	var problems []diag.Problem
	if ws.newErr != "" {
		problems = append(problems, diag.Problem{Severity: diag.Warning, Object: ws.s.opts.Dir,
			Message: "cannot watch the directory (" + ws.newErr + "): " + resync})
	}
	paths := make([]string, 0, len(ws.failing))
	for p := range ws.failing {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		problems = append(problems, diag.Problem{Severity: diag.Warning, Object: p,
			Message: "cannot watch the directory (" + ws.failing[p] + "): " + resync})
	}
	b.Report(watchProblemSource, ws.s.opts.Dir, problems)
}

func (ws *watching) channels() (<-chan fsnotify.Event, <-chan error) {
	if ws.w == nil {
		return nil, nil
	}
	return ws.w.Events(), ws.w.Errors()
}

func (ws *watching) close() {
	if ws.w != nil {
		_ = ws.w.Close()
	}
}

// Run reads the directory, marks the source synced, then watches it until
// stop closes: file events trigger a re-read after the debounce period, and
// the directory is re-read every resync period regardless (which also
// retries what could not be watched).
func (s *Source) Run(stop <-chan struct{}) {
	defer close(s.stop)
	ws := &watching{s: s, failing: map[string]string{}}
	defer ws.close()
	ws.ensure(true)
	s.Reload()
	scope.Infof("loaded %s (version %d)", s.opts.Dir, s.Version())

	resync := time.NewTicker(s.opts.ResyncPeriod)
	defer resync.Stop()
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	events, errs := ws.channels()
	for {
		select {
		case <-stop:
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Has(fsnotify.Create) {
				// new directories must be watched too
				ws.walk()
			}
			if !relevant(ev.Name) {
				continue
			}
			debounce.Reset(s.opts.Debounce)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			scope.Warnf("watch error on %s: %v", s.opts.Dir, err)
		case <-debounce.C:
			s.Reload()
		case <-resync.C:
			if created := ws.w == nil; ws.ensure(false) && created {
				events, errs = ws.channels()
			}
			s.Reload()
		}
	}
}

// relevant filters events to config files and directories (a directory
// rename or removal changes which files exist).
func relevant(name string) bool {
	base := filepath.Base(name)
	if strings.HasPrefix(base, ".") && !strings.HasPrefix(base, "..") {
		return false
	}
	return IsConfigFile(name) || filepath.Ext(name) == "" || strings.HasPrefix(base, "..")
}
