package mesh

import (
	"slices"
	"sync"
)

// Source yields the raw YAML of one mesh configuration place: a file, or one
// key of a ConfigMap.
type Source interface {
	// Name identifies the source in logs, errors and warnings.
	Name() string
	// Current returns the text now held by the source, or nil when the
	// source is missing (no file, no ConfigMap, no key). The string is
	// immutable; the pointer may be kept.
	Current() *string
	// Subscribe registers fn to be called after Current changed. fn may run
	// on any goroutine and must not block for long.
	Subscribe(fn func())
}

var (
	_ Source = (*StaticSource)(nil)
	_ Source = (*FileSource)(nil)
)

// StaticSource is a Source whose text is set by its owner: tests, and the
// adapter that feeds a ConfigMap informer into a Watcher.
type StaticSource struct {
	name string

	mu      sync.Mutex
	content *string
	subs    []func()
}

// NewStaticSource returns a source named name holding content (nil: missing).
func NewStaticSource(name string, content *string) *StaticSource {
	return &StaticSource{name: name, content: copyText(content)}
}

// Name implements Source.
func (s *StaticSource) Name() string { return s.name }

// Current implements Source.
func (s *StaticSource) Current() *string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.content
}

// Subscribe implements Source.
func (s *StaticSource) Subscribe(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs = append(s.subs, fn)
}

// Set replaces the text (nil: missing). Subscribers are called synchronously,
// before Set returns, when the text differs from the previous one.
func (s *StaticSource) Set(content *string) {
	s.mu.Lock()
	if sameText(s.content, content) {
		s.mu.Unlock()
		return
	}
	s.content = copyText(content)
	subs := slices.Clone(s.subs)
	s.mu.Unlock()
	for _, fn := range subs {
		fn()
	}
}

func copyText(p *string) *string {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func sameText(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
