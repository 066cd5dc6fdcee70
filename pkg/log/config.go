package log

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
)

// Options configure output: levels, stack traces and callers per scope, the
// format and where it goes. They are Istio's logging flags (its pkg/log
// Options); the command fills them.
type Options struct {
	// OutputLevels is "scope:level,scope:level" (--log_output_level); a
	// bare level is the default scope's, "all" stands for every scope.
	// Levels: debug, info, warn, error, fatal, none.
	OutputLevels string
	// StackTraceLevels is "scope:level,..." in the same form
	// (--log_stacktrace_level): messages at or above a scope's level
	// carry a stack trace.
	StackTraceLevels string
	// LogCallers is a comma-separated list of scopes ("all": every one)
	// whose messages name their call site (--log_caller).
	LogCallers string
	// JSON writes one JSON object per line instead of text (--log_as_json).
	JSON bool
	// OutputPaths are where logs go (--log_target): "stdout", "stderr" or
	// files, appended to (created when missing). Empty: standard error
	// (the command's flag defaults to stdout, as Istio's).
	OutputPaths []string
	// RotateOutputPath is a file that logs also go to and that is rotated
	// (--log_rotate), by RotationMaxSize megabytes, RotationMaxAge days
	// and RotationMaxBackups old files (0: no limit on age or backups; 0
	// size: lumberjack's 100 MB).
	RotateOutputPath   string
	RotationMaxSize    int
	RotationMaxAge     int
	RotationMaxBackups int
	// Out, when set, replaces OutputPaths (tests).
	Out io.Writer
	// Stdout and Stderr are what "stdout" and "stderr" mean (default the
	// process's).
	Stdout, Stderr io.Writer
}

// Rotation defaults of Istio's logging flags (the ones it had while it
// rotated logs itself: its size default is in megabytes, so 100 TB).
const (
	DefaultRotationMaxAge     = 30
	DefaultRotationMaxSize    = 100 * 1024 * 1024
	DefaultRotationMaxBackups = 1000
)

// sink is the configured output.
type sink struct {
	mu      sync.Mutex
	w       io.Writer
	json    bool
	closers []io.Closer
}

var (
	cur  atomic.Pointer[sink]
	bufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}
)

func init() {
	cur.Store(&sink{w: os.Stderr})
}

func currentSink() *sink { return cur.Load() }

// write encodes e and writes it in one Write, so that lines never
// interleave. A failed write is reported on standard error, as zap
// reports it on its error output.
func (s *sink) write(e *entry) {
	bp := bufs.Get().(*[]byte)
	b := (*bp)[:0]
	if s.json {
		b = appendJSON(b, e)
	} else {
		b = appendConsole(b, e)
	}
	s.mu.Lock()
	_, err := s.w.Write(b)
	s.mu.Unlock()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v log write error: %v\n", time.Now(), err)
	}
	if cap(b) <= 64<<10 {
		*bp = b
		bufs.Put(bp)
	}
}

// Configure applies options. It fails, changing nothing, on a level list
// that does not parse (naming the entry, in Istio's words) or an output
// that cannot be opened. Files of a previous configuration are closed.
// The standard library's log package and slog's default logger then write
// through the default scope, and the Kubernetes libraries' klog through
// the klog scope, as Istio redirects them.
func Configure(o Options) error {
	outLevels, err := parseLevels(o.OutputLevels)
	if err != nil {
		return err
	}
	stackLevels, err := parseLevels(o.StackTraceLevels)
	if err != nil {
		return err
	}
	s, err := openSink(o)
	if err != nil {
		return err
	}
	for _, sl := range outLevels {
		sl.apply((*Scope).SetLevel)
	}
	for _, sl := range stackLevels {
		sl.apply((*Scope).SetStackTraceLevel)
	}
	for _, name := range strings.Split(o.LogCallers, ",") {
		switch name = strings.TrimSpace(name); name {
		case "":
		case overrideScope:
			for _, sc := range Scopes() {
				sc.SetLogCallers(true)
			}
		default:
			RegisterScope(name, "").SetLogCallers(true)
		}
	}
	old := cur.Swap(s)
	_ = closeSink(old)
	slog.SetDefault(Default.Slog())
	redirectKlog.Do(setKlogLogger)
	return nil
}

// Close closes the files of the current configuration; logs go to
// standard error afterwards.
func Close() error {
	return closeSink(cur.Swap(&sink{w: os.Stderr}))
}

func closeSink(s *sink) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, c := range s.closers {
		errs = append(errs, c.Close())
	}
	s.closers = nil
	return errors.Join(errs...)
}

func openSink(o Options) (*sink, error) {
	stdout, stderr := o.Stdout, o.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	s := &sink{json: o.JSON}
	var ws []io.Writer
	switch {
	case o.Out != nil:
		ws = append(ws, o.Out)
	case len(o.OutputPaths) == 0:
		ws = append(ws, stderr)
	}
	if o.Out == nil {
		for _, p := range o.OutputPaths {
			switch p {
			case "stdout":
				ws = append(ws, stdout)
			case "stderr":
				ws = append(ws, stderr)
			default:
				f, err := openFile(p)
				if err != nil {
					_ = closeSink(s)
					return nil, err
				}
				ws = append(ws, f)
				s.closers = append(s.closers, f)
			}
		}
	}
	if o.RotateOutputPath != "" {
		r := &lumberjack.Logger{Filename: o.RotateOutputPath, MaxSize: o.RotationMaxSize,
			MaxAge: o.RotationMaxAge, MaxBackups: o.RotationMaxBackups}
		ws = append(ws, r)
		s.closers = append(s.closers, r)
	}
	switch len(ws) {
	case 0:
		s.w = io.Discard
	case 1:
		s.w = ws[0]
	default:
		s.w = multiWriter(ws)
	}
	return s, nil
}

// openFile opens a --log_target path for appending, as zap.Open does (a
// file:// URL names a local path too).
func openFile(p string) (*os.File, error) {
	if strings.HasPrefix(p, "file://") {
		u, err := url.Parse(p)
		if err != nil {
			return nil, fmt.Errorf("--log_target %s: %v", p, err)
		}
		p = u.Path
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("--log_target: %v", err)
	}
	return f, nil
}

// multiWriter writes to every writer, even after one fails (as zap's
// multi write syncer), and returns the errors joined.
type multiWriter []io.Writer

func (m multiWriter) Write(p []byte) (int, error) {
	var errs []error
	for _, w := range m {
		if _, err := w.Write(p); err != nil {
			errs = append(errs, err)
		}
	}
	return len(p), errors.Join(errs...)
}

// scopeLevel is one entry of a level list.
type scopeLevel struct {
	scope string
	level Level
}

func (sl scopeLevel) apply(set func(*Scope, Level)) {
	if sl.scope == overrideScope {
		for _, s := range Scopes() {
			set(s, sl.level)
		}
		return
	}
	// a scope registered later (some are, at server start) keeps the
	// level given here
	set(RegisterScope(sl.scope, ""), sl.level)
}

// parseLevels parses "scope:level,level,..." as Istio does: an entry
// without a scope is the default scope's; "all" is every scope. Empty
// entries are skipped.
func parseLevels(spec string) ([]scopeLevel, error) {
	var out []scopeLevel
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		pieces := strings.Split(part, ":")
		var sl scopeLevel
		var lvl string
		switch len(pieces) {
		case 1:
			sl.scope, lvl = DefaultScopeName, pieces[0]
		case 2:
			sl.scope, lvl = pieces[0], pieces[1]
		default:
			return nil, fmt.Errorf("invalid output level format '%s'", part)
		}
		l, err := ParseLevel(lvl)
		if err != nil {
			return nil, err
		}
		if sl.scope == "" || strings.Contains(sl.scope, ".") {
			return nil, fmt.Errorf("invalid output level format '%s'", part)
		}
		sl.level = l
		out = append(out, sl)
	}
	return out, nil
}
