// Package logtest captures what the log scopes write, for tests that check a
// failure is reported.
package logtest

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/meshplane/istiod/pkg/log"
)

// Buffer holds the captured log lines (text format). It is safe for
// concurrent use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything captured so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines returns the captured lines at level (DEBUG, INFO, WARN, ERROR) that
// contain every one of parts.
func (b *Buffer) Lines(level string, parts ...string) []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if !strings.Contains(l, "level="+level+" ") {
			continue
		}
		all := true
		for _, p := range parts {
			if !strings.Contains(l, p) {
				all = false
				break
			}
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

// Capture sends all log output to a new Buffer until the test ends, then back
// to stderr. Log output is process-wide: tests using it must not run in
// parallel with each other.
func Capture(t testing.TB) *Buffer {
	t.Helper()
	b := &Buffer{}
	if err := log.Configure(log.Options{Out: b}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = log.Configure(log.Options{}) })
	return b
}
