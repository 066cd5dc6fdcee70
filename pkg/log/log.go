package log

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Level is a scope's level; None silences it.
type Level int32

// Levels, lowest first. Fatal is Istio's level above error: a scope at
// fatal writes nothing this control plane logs (it logs nothing fatal).
const (
	DebugLevel Level = iota
	InfoLevel
	WarnLevel
	ErrorLevel
	FatalLevel
	NoneLevel
)

var levelNames = map[string]Level{"debug": DebugLevel, "info": InfoLevel, "warn": WarnLevel, "error": ErrorLevel,
	"fatal": FatalLevel, "none": NoneLevel}

// String is the level's name as Istio writes it (zap's lowercase names).
func (l Level) String() string {
	switch l {
	case DebugLevel:
		return "debug"
	case InfoLevel:
		return "info"
	case WarnLevel:
		return "warn"
	case ErrorLevel:
		return "error"
	case FatalLevel:
		return "fatal"
	}
	return "none"
}

// slogFatal is the slog level of FatalLevel (slog has none).
const slogFatal = slog.LevelError + 4

func (l Level) slog() slog.Level {
	switch l {
	case DebugLevel:
		return slog.LevelDebug
	case InfoLevel:
		return slog.LevelInfo
	case WarnLevel:
		return slog.LevelWarn
	case ErrorLevel:
		return slog.LevelError
	}
	return slogFatal
}

func fromSlog(l slog.Level) Level {
	switch {
	case l < slog.LevelInfo:
		return DebugLevel
	case l < slog.LevelWarn:
		return InfoLevel
	case l < slog.LevelError:
		return WarnLevel
	case l < slogFatal:
		return ErrorLevel
	}
	return FatalLevel
}

// ParseLevel parses debug, info, warn, error, fatal or none, as Istio's
// flags spell them (warning is accepted too).
func ParseLevel(s string) (Level, error) {
	if strings.EqualFold(s, "warning") {
		return WarnLevel, nil
	}
	l, ok := levelNames[strings.ToLower(s)]
	if !ok {
		return 0, fmt.Errorf("invalid output level '%s'", s)
	}
	return l, nil
}

// Scope is a named logger with its own level, stack trace level and caller
// setting (Istio's --log_output_level, --log_stacktrace_level and
// --log_caller).
type Scope struct {
	name  string
	desc  string
	level atomic.Int32
	// stack is the lowest level whose messages carry a stack trace
	stack   atomic.Int32
	callers atomic.Bool
}

var (
	mu     sync.Mutex
	scopes = map[string]*Scope{}
)

// DefaultScopeName is the scope of unscoped messages: Istio writes no
// scope column for it.
const DefaultScopeName = "default"

// overrideScope in a level list stands for every scope (Istio's "all").
const overrideScope = "all"

// RegisterScope returns the scope with that name, creating it at info level
// without stack traces or callers. Istio refuses names with ':', ',' or '.'
// (they would not parse in the flags): so does this.
func RegisterScope(name, description string) *Scope {
	if strings.ContainsAny(name, ":,.") {
		panic(fmt.Sprintf("scope name %s is invalid, it cannot contain colons, commas, or periods", name))
	}
	mu.Lock()
	defer mu.Unlock()
	if s, ok := scopes[name]; ok {
		if s.desc == "" {
			s.desc = description
		}
		return s
	}
	s := &Scope{name: name, desc: description}
	s.level.Store(int32(InfoLevel))
	s.stack.Store(int32(NoneLevel))
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

// StackTraceLevel is the lowest level whose messages carry a stack trace
// (NoneLevel: none do).
func (s *Scope) StackTraceLevel() Level { return Level(s.stack.Load()) }

// SetStackTraceLevel changes the scope's stack trace level.
func (s *Scope) SetStackTraceLevel(l Level) { s.stack.Store(int32(l)) }

// LogCallers reports whether the scope's messages name their call site.
func (s *Scope) LogCallers() bool { return s.callers.Load() }

// SetLogCallers turns the caller column on or off.
func (s *Scope) SetLogCallers(on bool) { s.callers.Store(on) }

// Enabled reports whether messages at l are written.
func (s *Scope) Enabled(l Level) bool { return l >= s.Level() && l < NoneLevel }

// dumpStack reports whether a message at l carries a stack trace: its
// level is at or above the scope's stack trace level. (Istio's code, for
// scopes other than default, compares the stack trace level with error
// whatever the message's level, so that ads:error there puts a stack under
// every ads message, debug ones included; we apply the flag as its help
// describes it, to every scope alike.)
func (s *Scope) dumpStack(l Level) bool {
	st := s.StackTraceLevel()
	return st < NoneLevel && l >= st
}

// output writes one message. skip is the number of frames between the
// function the user called and output (0 when that function calls output
// itself): the caller column and the stack start at the user's call.
func (s *Scope) output(skip int, l Level, msg string, kv []any) {
	var pc uintptr
	if s.LogCallers() {
		pc = callerPC(skip + 3)
	}
	var stack string
	if s.dumpStack(l) {
		stack = stackTrace(skip + 3)
	}
	r := slog.NewRecord(now(), l.slog(), msg, pc)
	r.Add(kv...)
	write(s, l, r, nil, stack)
}

// Debugf logs at debug level.
func (s *Scope) Debugf(format string, args ...any) { s.logf(1, DebugLevel, format, args) }

// Infof logs at info level.
func (s *Scope) Infof(format string, args ...any) { s.logf(1, InfoLevel, format, args) }

// Warnf logs at warn level.
func (s *Scope) Warnf(format string, args ...any) { s.logf(1, WarnLevel, format, args) }

// Errorf logs at error level.
func (s *Scope) Errorf(format string, args ...any) { s.logf(1, ErrorLevel, format, args) }

// Debug logs a message with key/value attributes at debug level; Istio's
// text format appends them to the message as k=v (see encode.go).
func (s *Scope) Debug(msg string, kv ...any) { s.logkv(1, DebugLevel, msg, kv) }

// Info logs at info level with attributes.
func (s *Scope) Info(msg string, kv ...any) { s.logkv(1, InfoLevel, msg, kv) }

// Warn logs at warn level with attributes.
func (s *Scope) Warn(msg string, kv ...any) { s.logkv(1, WarnLevel, msg, kv) }

// Error logs at error level with attributes.
func (s *Scope) Error(msg string, kv ...any) { s.logkv(1, ErrorLevel, msg, kv) }

func (s *Scope) logkv(skip int, l Level, msg string, kv []any) {
	if !s.Enabled(l) {
		return
	}
	s.output(skip+1, l, msg, kv)
}

func (s *Scope) logf(skip int, l Level, format string, args []any) {
	if !s.Enabled(l) {
		return
	}
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	s.output(skip+1, l, msg, nil)
}

// Slog returns a *slog.Logger writing through this scope (for libraries that
// take one); its level follows the scope's.
func (s *Scope) Slog() *slog.Logger { return slog.New(&Handler{s: s}) }

// Default is the scope of messages without a more specific one.
var Default = RegisterScope(DefaultScopeName, "Unscoped logging messages.")

// Infof, Warnf, Errorf and Debugf log to the default scope.
func Infof(format string, args ...any) { Default.logf(1, InfoLevel, format, args) }

// Warnf logs to the default scope.
func Warnf(format string, args ...any) { Default.logf(1, WarnLevel, format, args) }

// Errorf logs to the default scope.
func Errorf(format string, args ...any) { Default.logf(1, ErrorLevel, format, args) }

// Debugf logs to the default scope.
func Debugf(format string, args ...any) { Default.logf(1, DebugLevel, format, args) }
