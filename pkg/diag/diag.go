package diag

import (
	"sort"
	"sync"
	"time"
)

// Severity of a problem.
type Severity string

// Severities.
const (
	Warning Severity = "warning"
	Error   Severity = "error"
)

// Problem is one finding about one object or input.
type Problem struct {
	Severity Severity `json:"severity"`
	// Source is the component that found it: "file", "mesh", "crd", ...
	Source string `json:"source"`
	// Subject is what the reporter re-reads as a unit (a file path, "mesh").
	Subject string `json:"subject"`
	// Object names the object (kind namespace/name) when known.
	Object string `json:"object,omitempty"`
	// Field is the field path when known (e.g. spec.http[0].routez).
	Field   string    `json:"field,omitempty"`
	Message string    `json:"message"`
	Since   time.Time `json:"since"`
}

type key struct{ source, subject string }

// Board holds the current problems. The zero value is not usable; use New.
type Board struct {
	mu        sync.RWMutex
	now       func() time.Time
	problems  map[key][]Problem
	providers []*provider
}

// provider is a function the board asks for its problems on every List,
// with the time each of them was first seen.
type provider struct {
	list func() []Problem

	mu    sync.Mutex
	since map[string]time.Time // by identity, the problems of the last call
}

// AddProvider adds a function whose problems List includes on every call,
// for components that keep their own list (e.g. the mesh watcher). A
// problem without a Since time is stamped with the time List first saw it,
// kept while the provider keeps returning it.
func (b *Board) AddProvider(f func() []Problem) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.providers = append(b.providers, &provider{list: f, since: map[string]time.Time{}})
}

// problems calls the provider and stamps what it returns; the returned
// slice is a copy the caller owns.
func (p *provider) problems(now func() time.Time) []Problem {
	got := p.list()
	if len(got) == 0 {
		p.mu.Lock()
		clear(p.since)
		p.mu.Unlock()
		return nil
	}
	out := append([]Problem(nil), got...)
	t := now()
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := make(map[string]time.Time, len(out))
	for i := range out {
		id := identity(out[i])
		if out[i].Since.IsZero() {
			if first, ok := p.since[id]; ok {
				out[i].Since = first
			} else {
				out[i].Since = t
			}
		}
		seen[id] = out[i].Since
	}
	p.since = seen
	return out
}

// New returns an empty board using now for time stamps (time.Now when nil).
func New(now func() time.Time) *Board {
	if now == nil {
		now = time.Now
	}
	return &Board{now: now, problems: map[key][]Problem{}}
}

// Report replaces the problems of (source, subject). A problem already present
// (same object, field, severity and message) keeps its original Since time.
func (b *Board) Report(source, subject string, problems []Problem) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := key{source, subject}
	if len(problems) == 0 {
		delete(b.problems, k)
		return
	}
	old := map[string]time.Time{}
	for _, p := range b.problems[k] {
		old[identity(p)] = p.Since
	}
	now := b.now()
	out := make([]Problem, len(problems))
	for i, p := range problems {
		p.Source, p.Subject = source, subject
		if t, ok := old[identity(p)]; ok {
			p.Since = t
		} else if p.Since.IsZero() {
			p.Since = now
		}
		out[i] = p
	}
	b.problems[k] = out
}

// Clear removes the problems of (source, subject).
func (b *Board) Clear(source, subject string) { b.Report(source, subject, nil) }

func identity(p Problem) string {
	return string(p.Severity) + "\x00" + p.Object + "\x00" + p.Field + "\x00" + p.Message
}

// List returns every current problem, sorted by source, subject, then order of report.
func (b *Board) List() []Problem {
	b.mu.RLock()
	defer b.mu.RUnlock()
	keys := make([]key, 0, len(b.problems))
	for k := range b.problems {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].source != keys[j].source {
			return keys[i].source < keys[j].source
		}
		return keys[i].subject < keys[j].subject
	})
	var out []Problem
	for _, k := range keys {
		out = append(out, b.problems[k]...)
	}
	for _, p := range b.providers {
		out = append(out, p.problems(b.now)...)
	}
	return out
}

// Count returns the number of problems of a severity.
func (b *Board) Count(s Severity) int {
	n := 0
	for _, p := range b.List() {
		if p.Severity == s {
			n++
		}
	}
	return n
}
