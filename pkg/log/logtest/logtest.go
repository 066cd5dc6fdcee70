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

// Buffer holds the captured log lines, in Istio's text format
// ("<time>\t<level>\t<scope>\t<message>\t<key>=<value> ...", no scope
// column for the default scope). It is safe for concurrent use.
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

// Lines returns the captured lines at level (debug, info, warn, error; in
// either case) that contain every one of parts. A scope is matched with
// its column: "\tsecurity\t".
func (b *Buffer) Lines(level string, parts ...string) []string {
	var out []string
	level = strings.ToLower(level)
	for _, l := range strings.Split(b.String(), "\n") {
		if f := strings.SplitN(l, "\t", 3); len(f) < 3 || f[1] != level {
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
