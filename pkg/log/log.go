package log

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Level is a scope's level; None silences it.
type Level int32

// Levels, lowest first.
const (
	DebugLevel Level = iota
	InfoLevel
	WarnLevel
	ErrorLevel
	NoneLevel
)

var levelNames = map[string]Level{"debug": DebugLevel, "info": InfoLevel, "warn": WarnLevel, "warning": WarnLevel, "error": ErrorLevel, "none": NoneLevel}

func (l Level) slog() slog.Level {
	switch l {
	case DebugLevel:
		return slog.LevelDebug
	case InfoLevel:
		return slog.LevelInfo
	case WarnLevel:
		return slog.LevelWarn
	}
	return slog.LevelError
}

// ParseLevel parses debug, info, warn, error or none.
func ParseLevel(s string) (Level, error) {
	l, ok := levelNames[strings.ToLower(s)]
	if !ok {
		return 0, fmt.Errorf("unknown log level %q (debug, info, warn, error, none)", s)
	}
	return l, nil
}

// Scope is a named logger with its own level.
type Scope struct {
	name  string
	desc  string
	level atomic.Int32
}

var (
	mu      sync.Mutex
	scopes  = map[string]*Scope{}
	handler atomic.Pointer[slog.Handler]
)

func init() {
	h := slog.Handler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	handler.Store(&h)
}

// RegisterScope returns the scope with that name, creating it at info level.
func RegisterScope(name, description string) *Scope {
	mu.Lock()
	defer mu.Unlock()
	if s, ok := scopes[name]; ok {
		return s
	}
	s := &Scope{name: name, desc: description}
	s.level.Store(int32(InfoLevel))
	scopes[name] = s
	return s
}

// FindScope returns a registered scope.
func FindScope(name string) (*Scope, bool) {
	mu.Lock()
	defer mu.Unlock()
	s, ok := scopes[name]
	return s, ok
}

// Scopes lists the registered scopes by name.
func Scopes() []*Scope {
	mu.Lock()
	defer mu.Unlock()
	out := make([]*Scope, 0, len(scopes))
	for _, s := range scopes {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Name of the scope.
func (s *Scope) Name() string { return s.name }

// Description of the scope.
func (s *Scope) Description() string { return s.desc }

// Level of the scope.
func (s *Scope) Level() Level { return Level(s.level.Load()) }

// SetLevel changes the scope's level.
func (s *Scope) SetLevel(l Level) { s.level.Store(int32(l)) }

// Enabled reports whether messages at l are written.
func (s *Scope) Enabled(l Level) bool { return l >= s.Level() && l != NoneLevel }

func (s *Scope) log(l Level, msg string, args ...any) {
	if !s.Enabled(l) {
		return
	}
	h := *handler.Load()
	r := slog.NewRecord(now(), l.slog(), msg, 0)
	r.AddAttrs(slog.String("scope", s.name))
	r.Add(args...)
	_ = h.Handle(context.Background(), r)
}

// Debugf logs at debug level.
func (s *Scope) Debugf(format string, args ...any) { s.logf(DebugLevel, format, args...) }

// Infof logs at info level.
func (s *Scope) Infof(format string, args ...any) { s.logf(InfoLevel, format, args...) }

// Warnf logs at warn level.
func (s *Scope) Warnf(format string, args ...any) { s.logf(WarnLevel, format, args...) }

// Errorf logs at error level.
func (s *Scope) Errorf(format string, args ...any) { s.logf(ErrorLevel, format, args...) }

// Debug, Info, Warn and Error log a message with key/value attributes.
func (s *Scope) Debug(msg string, kv ...any) { s.log(DebugLevel, msg, kv...) }

// Info logs at info level with attributes.
func (s *Scope) Info(msg string, kv ...any) { s.log(InfoLevel, msg, kv...) }

// Warn logs at warn level with attributes.
func (s *Scope) Warn(msg string, kv ...any) { s.log(WarnLevel, msg, kv...) }

// Error logs at error level with attributes.
func (s *Scope) Error(msg string, kv ...any) { s.log(ErrorLevel, msg, kv...) }

func (s *Scope) logf(l Level, format string, args ...any) {
	if !s.Enabled(l) {
		return
	}
	s.log(l, fmt.Sprintf(format, args...))
}

// Slog returns a *slog.Logger writing through this scope (for libraries that
// take one); its level follows the scope's.
func (s *Scope) Slog() *slog.Logger { return slog.New(scopeHandler{s: s}) }

type scopeHandler struct {
	s     *Scope
	attrs []slog.Attr
	group string
}

func (h scopeHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.s.Enabled(fromSlog(l))
}

func (h scopeHandler) Handle(ctx context.Context, r slog.Record) error {
	r2 := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r2.AddAttrs(slog.String("scope", h.s.name))
	r2.AddAttrs(h.attrs...)
	r.Attrs(func(a slog.Attr) bool { r2.AddAttrs(a); return true })
	return (*handler.Load()).Handle(ctx, r2)
}

func (h scopeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return h
}

func (h scopeHandler) WithGroup(name string) slog.Handler { h.group = name; return h }

func fromSlog(l slog.Level) Level {
	switch {
	case l < slog.LevelInfo:
		return DebugLevel
	case l < slog.LevelWarn:
		return InfoLevel
	case l < slog.LevelError:
		return WarnLevel
	}
	return ErrorLevel
}

// Options configure output: levels per scope and the format.
type Options struct {
	// OutputLevels is "scope:level,scope:level"; a bare level applies to
	// every scope ("default" is the scope of unscoped messages).
	OutputLevels string
	// JSON writes one JSON object per line instead of text.
	JSON bool
	// Out is where logs go (default stderr).
	Out io.Writer
}

// Configure applies options; it fails on an unknown level, naming it.
func Configure(o Options) error {
	out := o.Out
	if out == nil {
		out = os.Stderr
	}
	var h slog.Handler
	hopts := &slog.HandlerOptions{Level: slog.LevelDebug}
	if o.JSON {
		h = slog.NewJSONHandler(out, hopts)
	} else {
		h = slog.NewTextHandler(out, hopts)
	}
	if err := applyLevels(o.OutputLevels); err != nil {
		return err
	}
	handler.Store(&h)
	return nil
}

func applyLevels(spec string) error {
	if spec == "" {
		return nil
	}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, lvl, ok := strings.Cut(part, ":")
		if !ok {
			l, err := ParseLevel(name)
			if err != nil {
				return err
			}
			for _, s := range Scopes() {
				s.SetLevel(l)
			}
			continue
		}
		l, err := ParseLevel(lvl)
		if err != nil {
			return fmt.Errorf("--log_output_level %q: %v", part, err)
		}
		RegisterScope(name, "").SetLevel(l)
	}
	return nil
}

// Default is the scope of messages without a more specific one.
var Default = RegisterScope("default", "unscoped messages")

// Infof, Warnf, Errorf and Debugf log to the default scope.
func Infof(format string, args ...any) { Default.Infof(format, args...) }

// Warnf logs to the default scope.
func Warnf(format string, args ...any) { Default.Warnf(format, args...) }

// Errorf logs to the default scope.
func Errorf(format string, args ...any) { Default.Errorf(format, args...) }

// Debugf logs to the default scope.
func Debugf(format string, args ...any) { Default.Debugf(format, args...) }
