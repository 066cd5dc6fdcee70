package file

import (
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Run reads the directory, marks the source synced, then watches it until
// stop closes: file events trigger a re-read after the debounce period, and
// the directory is re-read every resync period regardless.
func (s *Source) Run(stop <-chan struct{}) {
	defer close(s.stop)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		scope.Warnf("cannot watch %s (%v); relying on periodic resync", s.opts.Dir, err)
	} else {
		defer w.Close()
		s.watchTree(w)
	}
	s.Reload()
	scope.Infof("loaded %s (version %d)", s.opts.Dir, s.Version())

	var events <-chan fsnotify.Event
	var errs <-chan error
	if w != nil {
		events, errs = w.Events, w.Errors
	}
	resync := time.NewTicker(s.opts.ResyncPeriod)
	defer resync.Stop()
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
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
				s.watchTree(w)
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

// watchTree adds a watch on the directory and every subdirectory.
func (s *Source) watchTree(w *fsnotify.Watcher) {
	_ = filepath.WalkDir(s.opts.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if path != s.opts.Dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if err := w.Add(path); err != nil {
			scope.Debugf("cannot watch %s: %v", path, err)
		}
		return nil
	})
}
