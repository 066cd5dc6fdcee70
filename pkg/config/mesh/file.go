package mesh

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// FileSource is a Source backed by a file, typically the mesh file mounted
// from a ConfigMap volume. It watches both the file and its directory, so
// in-place writes, atomic renames and the kubelet's "..data" symlink swaps are
// all seen; events are debounced and the file is also re-read periodically in
// case an event was lost. Subscribers are notified only when the text changes.
//
// The source owns one goroutine, which ends when the WithStop channel closes
// or Close is called; Done is closed once it has ended.
type FileSource struct {
	path string
	name string
	o    options
	fsw  *fsnotify.Watcher

	mu      sync.Mutex
	content *string
	subs    []func()

	closeOnce sync.Once
	closed    chan struct{}
	done      chan struct{}
}

// NewFileSource starts watching path. A missing file is not an error (Current
// returns nil until it appears); a directory that cannot be watched is.
// Options used: WithStop, WithDebounce, WithResync, WithClock, WithLogger.
func NewFileSource(path string, opts ...Option) (*FileSource, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("mesh file %s: %w", path, err)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("mesh file %s: cannot create watcher: %w", abs, err)
	}
	if err := fsw.Add(filepath.Dir(abs)); err != nil {
		_ = fsw.Close()
		return nil, fmt.Errorf("mesh file %s: cannot watch directory: %w", abs, err)
	}
	f := &FileSource{
		path:   abs,
		name:   "file:" + abs,
		o:      buildOptions(opts),
		fsw:    fsw,
		closed: make(chan struct{}),
		done:   make(chan struct{}),
	}
	_ = fsw.Add(abs) // absent files are picked up through the directory watch
	content, err := f.read()
	if err != nil {
		f.o.logger.Warn("cannot read mesh file, treating it as missing", "source", f.name, "error", err)
	}
	f.content = content
	go f.run()
	return f, nil
}

// Name implements Source.
func (f *FileSource) Name() string { return f.name }

// Path is the absolute path of the watched file.
func (f *FileSource) Path() string { return f.path }

// Current implements Source.
func (f *FileSource) Current() *string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.content
}

// Subscribe implements Source. fn runs on the source's goroutine.
func (f *FileSource) Subscribe(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = append(f.subs, fn)
}

// Close stops the goroutine; it is safe to call more than once.
func (f *FileSource) Close() {
	f.closeOnce.Do(func() { close(f.closed) })
}

// Done is closed when the source's goroutine has ended.
func (f *FileSource) Done() <-chan struct{} { return f.done }

func (f *FileSource) run() {
	defer close(f.done)
	defer func() { _ = f.fsw.Close() }()
	var debounce, resync <-chan time.Time
	if f.o.resync > 0 {
		resync = f.o.clock.After(f.o.resync)
	}
	for {
		select {
		case <-f.o.stop:
			return
		case <-f.closed:
			return
		case ev, ok := <-f.fsw.Events:
			if !ok {
				return
			}
			if debounce == nil && f.relevant(ev) {
				debounce = f.o.clock.After(f.o.debounce)
			}
		case err, ok := <-f.fsw.Errors:
			if !ok {
				return
			}
			f.o.logger.Warn("mesh file watch error", "source", f.name, "error", err)
		case <-debounce:
			debounce = nil
			f.refresh()
		case <-resync:
			resync = f.o.clock.After(f.o.resync)
			f.refresh()
		}
	}
}

// relevant keeps events about the file itself and about the kubelet's
// "..data" style entries; other files of the directory are noise.
func (f *FileSource) relevant(ev fsnotify.Event) bool {
	if ev.Name == f.path {
		return true
	}
	base := filepath.Base(ev.Name)
	return base == filepath.Base(f.path) || strings.HasPrefix(base, "..")
}

// refresh re-reads the file and notifies subscribers when the text changed.
func (f *FileSource) refresh() {
	// The file may now be a different inode (rename, symlink swap): watch it
	// again. A missing file fails here and is found later via the directory.
	_ = f.fsw.Add(f.path)
	next, err := f.read()
	if err != nil {
		f.o.logger.Warn("cannot read mesh file, keeping its previous content", "source", f.name, "error", err)
		return
	}
	f.mu.Lock()
	if sameText(f.content, next) {
		f.mu.Unlock()
		return
	}
	f.content = next
	subs := slices.Clone(f.subs)
	f.mu.Unlock()
	for _, fn := range subs {
		fn()
	}
}

func (f *FileSource) read() (*string, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}
