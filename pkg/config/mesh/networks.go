package mesh

import (
	meshconfig "istio.io/api/mesh/v1alpha1"
)

// NetworksWatcher keeps the effective MeshNetworks up to date with its
// sources. Unlike mesh config, documents are not merged: the first present
// source wins outright, as in Istio. A failing document keeps the last good
// value (DefaultMeshNetworks before the first success); no present source
// gives DefaultMeshNetworks.
type NetworksWatcher struct {
	c *core[*meshconfig.MeshNetworks]
}

// NewNetworksWatcher computes the initial value synchronously and then
// follows the sources until stop is closed. Options used: WithLogger,
// WithClock.
func NewNetworksWatcher(sources []Source, stop <-chan struct{}, opts ...Option) *NetworksWatcher {
	o := buildOptions(opts)
	w := &NetworksWatcher{c: newCore("mesh networks", sources, stop, DefaultMeshNetworks(), o)}
	w.c.start(w.evaluate)
	return w
}

func (w *NetworksWatcher) evaluate() evaluation[*meshconfig.MeshNetworks] {
	ev := evaluation[*meshconfig.MeshNetworks]{errs: map[int]error{}}
	for i, s := range w.c.sources {
		text := s.Current()
		if text == nil {
			continue
		}
		mn, warns, err := parseMeshNetworks(*text, !w.c.o.noHostnameGateways)
		if err != nil {
			ev.errs[i] = err
			ev.keep = true
			return ev
		}
		ev.value = mn
		ev.warns = sourceWarnings(s.Name(), warns)
		return ev
	}
	ev.value = DefaultMeshNetworks()
	return ev
}

// Networks returns the current value. It is never nil and is shared: callers
// must not modify it.
func (w *NetworksWatcher) Networks() *meshconfig.MeshNetworks { return w.c.get() }

// AddNetworksHandler registers fn to run after every change of the value;
// see Watcher.AddMeshHandler for how handlers run.
func (w *NetworksWatcher) AddNetworksHandler(fn func()) { w.c.addHandler(fn) }

// Errors lists the sources whose current document is rejected.
func (w *NetworksWatcher) Errors() []SourceError { return w.c.errors() }

// Warnings lists the ignored unknown fields of the current document.
func (w *NetworksWatcher) Warnings() []SourceWarning { return w.c.warnings() }
