package log

import (
	"context"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
)

// Handler is the slog.Handler of a scope: records go out in Istio's format
// (encode.go) on the configured sink, at the scope's level, with the
// scope's caller and stack trace settings. Scope.Slog returns a logger on
// one; the scope's own methods use the same path.
type Handler struct {
	s *Scope
	// attrs are those of WithAttrs, their keys already prefixed with the
	// groups open at the time
	attrs []slog.Attr
	// prefix is the open groups, each followed by a dot ("g.h.")
	prefix string
}

// NewHandler returns the handler of scope s.
func NewHandler(s *Scope) *Handler { return &Handler{s: s} }

// Enabled implements slog.Handler.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return h.s.Enabled(fromSlog(l)) }

// Handle implements slog.Handler. The record's PC, which slog.Logger always
// sets, is the caller column when the scope logs callers.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	l := fromSlog(r.Level)
	if !h.s.Enabled(l) {
		return nil
	}
	if !h.s.LogCallers() {
		r.PC = 0
	}
	var stack string
	if h.s.dumpStack(l) {
		// from the caller of Handle: slog's own frames come first
		stack = stackTrace(3)
	}
	write(h.s, l, r, h, stack)
	return nil
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	out := *h
	out.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range as {
		out.attrs = appendAttr(out.attrs, h.prefix, a)
	}
	return &out
}

// WithGroup implements slog.Handler: the attributes that follow are named
// group.key (Istio's labels are flat).
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	out := *h
	out.prefix = h.prefix + name + "."
	return &out
}

// appendAttr appends a, resolved, with prefix before its key; a group's
// members are flattened into prefix.group.key; empty attributes and empty
// groups are dropped, as slog's own handlers drop them.
func appendAttr(dst []slog.Attr, prefix string, a slog.Attr) []slog.Attr {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return dst
	}
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p = prefix + a.Key + "."
		}
		for _, m := range a.Value.Group() {
			dst = appendAttr(dst, p, m)
		}
		return dst
	}
	a.Key = prefix + a.Key
	return append(dst, a)
}

// write encodes one record of scope s and writes it on the sink. h, when
// not nil, adds its attributes and groups.
func write(s *Scope, l Level, r slog.Record, h *Handler, stack string) {
	e := entry{time: r.Time, level: l, msg: r.Message, stack: stack}
	if s.name != DefaultScopeName {
		e.scope = s.name
	}
	if r.PC != 0 {
		e.caller = shortCaller(r.PC)
	}
	prefix := ""
	if h != nil {
		e.attrs = append(e.attrs, h.attrs...)
		prefix = h.prefix
	}
	r.Attrs(func(a slog.Attr) bool {
		e.attrs = appendAttr(e.attrs, prefix, a)
		return true
	})
	currentSink().write(&e)
}

// callerPC is the program counter skip frames up (runtime.Callers' skip:
// 0 is runtime.Callers, 1 callerPC, 2 its caller).
func callerPC(skip int) uintptr {
	var pcs [1]uintptr
	if runtime.Callers(skip, pcs[:]) == 0 {
		return 0
	}
	return pcs[0]
}

// shortCaller is zap's ShortCallerEncoder, which Istio's encoder config
// names: the file's last directory and name, a colon and the line
// ("xds/ads.go:42"); the full path when it has fewer than two slashes.
func shortCaller(pc uintptr) string {
	f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	if f.File == "" {
		return "undefined"
	}
	file := f.File
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		if j := strings.LastIndexByte(file[:i], '/'); j >= 0 {
			file = file[j+1:]
		}
	}
	return file + ":" + strconv.Itoa(f.Line)
}

// stackTrace is the goroutine's stack from skip frames up (as callerPC),
// in zap's format: for each frame its function, then a tab, the file, a
// colon and the line on the next line; frames separated by newlines.
func stackTrace(skip int) string {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(skip, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var b strings.Builder
	for {
		f, more := frames.Next()
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(f.Function)
		b.WriteString("\n\t")
		b.WriteString(f.File)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(f.Line))
		if !more {
			break
		}
	}
	return b.String()
}
