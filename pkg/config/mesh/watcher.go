package mesh

import (
	meshconfig "istio.io/api/mesh/v1alpha1"
)

// NoSourcesWarning is recorded when a Watcher has no source at all.
const NoSourcesWarning = "using default mesh config: no mesh config file and no Kubernetes client"

// DefaultsSourceName names the built-in defaults in warnings.
const DefaultsSourceName = "defaults"

// Watcher keeps the effective MeshConfig up to date with its sources.
//
// The value starts as DefaultMeshConfig and each present source is applied on
// it in order (a missing source is skipped). When one source fails: with a
// single source the last good config is kept; with several the failing source
// is skipped. Failures are listed by Errors and logged at WARN.
type Watcher struct {
	c *core[*meshconfig.MeshConfig]
}

// NewWatcher computes the initial config synchronously and then follows the
// sources until stop is closed (after which changes are ignored). Options
// used: WithLogger, WithClock.
func NewWatcher(sources []Source, stop <-chan struct{}, opts ...Option) *Watcher {
	o := buildOptions(opts)
	w := &Watcher{c: newCore("mesh config", sources, stop, DefaultMeshConfig(), o)}
	w.c.start(w.evaluate)
	return w
}

func (w *Watcher) evaluate() evaluation[*meshconfig.MeshConfig] {
	ev := evaluation[*meshconfig.MeshConfig]{errs: map[int]error{}}
	if len(w.c.sources) == 0 {
		ev.value = DefaultMeshConfig()
		ev.warns = []SourceWarning{{Source: DefaultsSourceName, Message: NoSourcesWarning}}
		return ev
	}
	cfg := DefaultMeshConfig()
	for i, s := range w.c.sources {
		text := s.Current()
		if text == nil {
			continue
		}
		next, warns, err := ApplyMeshConfig(*text, cfg)
		if err != nil {
			ev.errs[i] = err
			if len(w.c.sources) == 1 {
				// Istio's historical behaviour for one source: discard the
				// whole result and keep the last good config.
				ev.keep = true
				return ev
			}
			continue
		}
		cfg = next
		ev.warns = append(ev.warns, sourceWarnings(s.Name(), warns)...)
	}
	ev.value = cfg
	return ev
}

// Mesh returns the current config. It is never nil and is shared: callers
// must not modify it.
func (w *Watcher) Mesh() *meshconfig.MeshConfig { return w.c.get() }

// AddMeshHandler registers fn to run after every change of the config (not
// when a recompute yields an equal config). Handlers run serialised, in
// registration order, on the goroutine that reported the source change; they
// must not block for long nor update this watcher's sources synchronously.
func (w *Watcher) AddMeshHandler(fn func()) { w.c.addHandler(fn) }

// Errors lists the sources whose current document is rejected, in source
// order. The slice is the caller's.
func (w *Watcher) Errors() []SourceError { return w.c.errors() }

// Warnings lists the ignored unknown fields and validation warnings of the
// documents making up the current config, or the use of defaults when there
// is no source. The slice is the caller's.
func (w *Watcher) Warnings() []SourceWarning { return w.c.warnings() }
