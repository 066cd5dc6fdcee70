package log

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"
)

// entry is one message ready to encode.
type entry struct {
	time   time.Time
	level  Level
	scope  string // "" for the default scope: Istio emits no name for it
	caller string // "" unless the scope logs callers
	msg    string
	attrs  []slog.Attr // flat, resolved
	stack  string
}

// The two encodings are those of Istio's pkg/log, which configures zap with
// TimeKey "time", LevelKey "level", NameKey "scope", CallerKey "caller",
// MessageKey "msg", StacktraceKey "stack", a lowercase level encoder, the
// short caller encoder, the string duration encoder, its own time encoder
// (formatDate: UTC, microseconds, "Z") and "\n" line endings; its Scope
// names the zap entry after the scope, except for the default scope.

// appendConsole is zap's console encoder under that configuration: the
// time, the level, the scope (when there is one) and the caller (when
// logged) separated by tabs, then a tab and the message. Istio's Scope
// appends its labels to the message itself in text mode, after a tab, as
// key=value separated by spaces with fmt.Sprint values (its WithLabels),
// so zap sees no fields there. A stack trace follows on the next lines.
func appendConsole(b []byte, e *entry) []byte {
	b = appendDate(b, e.time)
	b = append(b, '\t')
	b = append(b, e.level.String()...)
	if e.scope != "" {
		b = append(b, '\t')
		b = append(b, e.scope...)
	}
	if e.caller != "" {
		b = append(b, '\t')
		b = append(b, e.caller...)
	}
	b = append(b, '\t')
	b = append(b, e.msg...)
	for i, a := range e.attrs {
		if i == 0 {
			b = append(b, '\t')
		} else {
			b = append(b, ' ')
		}
		b = append(b, a.Key...)
		b = append(b, '=')
		b = fmt.Append(b, a.Value.Any())
	}
	if e.stack != "" {
		b = append(b, '\n')
		b = append(b, e.stack...)
	}
	return append(b, '\n')
}

// appendJSON is zap's JSON encoder under that configuration: level, time,
// scope (when there is one), caller (when logged), msg, then Istio's labels
// as fields, then stack (when there is one), on one line. Strings that
// zap writes itself are escaped as zap escapes them (appendJSONString);
// labels are zap's reflected fields, encoded by encoding/json without HTML
// escaping, except a time.Duration, which is a duration field (a string
// such as "1.5s"), and, unlike Istio, an error, written as its message
// (encoding/json would write most errors as {}).
func appendJSON(b []byte, e *entry) []byte {
	b = append(b, `{"level":`...)
	b = appendJSONString(b, e.level.String())
	b = append(b, `,"time":"`...)
	b = appendDate(b, e.time)
	b = append(b, '"')
	if e.scope != "" {
		b = append(b, `,"scope":`...)
		b = appendJSONString(b, e.scope)
	}
	if e.caller != "" {
		b = append(b, `,"caller":`...)
		b = appendJSONString(b, e.caller)
	}
	b = append(b, `,"msg":`...)
	b = appendJSONString(b, e.msg)
	for _, a := range e.attrs {
		b = appendJSONField(b, a)
	}
	if e.stack != "" {
		b = append(b, `,"stack":`...)
		b = appendJSONString(b, e.stack)
	}
	return append(b, "}\n"...)
}

func appendJSONField(b []byte, a slog.Attr) []byte {
	v := a.Value.Any()
	switch x := v.(type) {
	case time.Duration:
		b = appendJSONKey(b, a.Key)
		return appendJSONString(b, x.String())
	case error:
		b = appendJSONKey(b, a.Key)
		return appendJSONString(b, x.Error())
	case nil:
		b = appendJSONKey(b, a.Key)
		return append(b, "null"...)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// zap's Field.AddTo: a field that cannot be encoded becomes
		// <key>Error with the reason
		b = appendJSONKey(b, a.Key+"Error")
		return appendJSONString(b, err.Error())
	}
	b = appendJSONKey(b, a.Key)
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

func appendJSONKey(b []byte, k string) []byte {
	b = append(b, ',')
	b = appendJSONString(b, k)
	return append(b, ':')
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as zap's JSON encoder does: '"' and '\' get a
// backslash; \n, \r and \t their escapes; other bytes below 0x20 \u00xx
// (lowercase hex); invalid UTF-8 becomes \ufffd; everything else, '<',
// '>', '&', U+2028 and U+2029 included, is written as it is.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	last := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			b = append(b, s[last:i]...)
			b = append(b, `\ufffd`...)
			i++
			last = i
			continue
		}
		if c >= 0x20 && c != '\\' && c != '"' {
			i++
			continue
		}
		b = append(b, s[last:i]...)
		switch c {
		case '\\', '"':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		last = i
	}
	b = append(b, s[last:]...)
	return append(b, '"')
}

// appendDate is Istio's time encoder (formatDate in its pkg/log): the time
// in UTC as 2006-01-02T15:04:05.000000Z, microseconds truncated, the year
// on four digits.
func appendDate(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	hour, minute, second := t.Clock()
	micros := t.Nanosecond() / 1000
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, second, 2)
	b = append(b, '.')
	b = appendDigits(b, micros, 6)
	return append(b, 'Z')
}

// appendDigits writes the last n decimal digits of v, zero-padded.
func appendDigits(b []byte, v, n int) []byte {
	var d [8]byte
	for i := n - 1; i >= 0; i-- {
		d[i] = byte(v%10) + '0'
		v /= 10
	}
	return append(b, d[:n]...)
}
