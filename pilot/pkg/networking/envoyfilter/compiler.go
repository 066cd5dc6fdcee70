package envoyfilter

import (
	"sync"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// Compiler keeps the conversion of each EnvoyFilter object for as long as
// snapshots use it, so that a push converts only the EnvoyFilters that
// changed. An object is recognised by its spec pointer (config objects are
// immutable: an update is a new spec) and its name and creation time.
// Entries not used by a snapshot are dropped when the one after it starts.
// The zero value is ready; it is safe for concurrent use.
type Compiler struct {
	mu        sync.Mutex
	seq       uint64
	cur, prev map[compileKey]*Filter
}

type compileKey struct {
	spec            *networking.EnvoyFilter
	namespace, name string
	created         time.Time
}

// Filter returns the conversion of w, converting it on first use. seq is
// the sequence number of the snapshot w belongs to.
func (c *Compiler) Filter(seq uint64, w *model.EnvoyFilterWrapper) *Filter {
	k := compileKey{spec: w.Spec, namespace: w.Config.Namespace, name: w.Config.Name, created: w.Config.CreationTimestamp}
	c.mu.Lock()
	if seq > c.seq || c.cur == nil {
		c.seq, c.prev, c.cur = seq, c.cur, map[compileKey]*Filter{}
	}
	if f, ok := c.cur[k]; ok {
		c.mu.Unlock()
		return f
	}
	if f, ok := c.prev[k]; ok {
		if seq == c.seq {
			c.cur[k] = f
		}
		c.mu.Unlock()
		return f
	}
	c.mu.Unlock()
	f := Compile(w.Config)
	c.mu.Lock()
	if seq == c.seq {
		c.cur[k] = f
	}
	c.mu.Unlock()
	return f
}

// Patches returns the patches that apply to proxy under push: the
// EnvoyFilters the snapshot selects for it, converted once each, in Istio's
// order. nil when none applies.
func (c *Compiler) Patches(push *model.PushContext, proxy *model.Proxy) *Patches {
	ws := push.EnvoyFilters(proxy)
	if len(ws) == 0 {
		return nil
	}
	fs := make([]*Filter, 0, len(ws))
	for _, w := range ws {
		fs = append(fs, c.Filter(push.Seq(), w))
	}
	return Select(proxy, push.RootNamespace(), fs)
}

// Problems lists the conversion problems of the EnvoyFilters the current
// snapshot has used.
func (c *Compiler) Problems() []Problem {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Problem
	for _, f := range c.cur {
		out = append(out, f.problems...)
	}
	sortProblems(out)
	return out
}
