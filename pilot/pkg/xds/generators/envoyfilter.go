package generators

import (
	"sort"
	"sync"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/envoyfilter"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/diag"
)

// EnvoyFilter patches are applied last, on the finished resources: cached
// resources are patched inside their cache entry (the patch set's Key is
// part of the key), so proxies with the same patches share the result;
// patching copies what it changes and never touches what others share.

// patchProblems keeps what patching dropped, per snapshot, for warningz.
type patchProblems struct {
	mu   sync.Mutex
	seq  uint64
	byID map[string]envoyfilter.Problem
}

func (p *patchProblems) record(seq uint64, ps []envoyfilter.Problem) {
	if len(ps) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if seq > p.seq || p.byID == nil {
		p.seq, p.byID = seq, map[string]envoyfilter.Problem{}
	}
	if seq < p.seq {
		return // a late generation of an older snapshot
	}
	for _, pr := range ps {
		if _, seen := p.byID[pr.String()]; !seen {
			genLog.Warnf("%s", pr.String())
		}
		p.byID[pr.String()] = pr
	}
}

func (p *patchProblems) list() []envoyfilter.Problem {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]envoyfilter.Problem, 0, len(p.byID))
	for _, pr := range p.byID {
		out = append(out, pr)
	}
	return out
}

func (g *SidecarGenerators) patchListeners(push *model.PushContext, _ *model.Proxy, ps *envoyfilter.Patches, pc envoyfilter.PatchContext, ls []*listenerCfg) []*listenerCfg {
	if ps.Empty() {
		return ls
	}
	out, problems := envoyfilter.PatchListeners(ps, pc, ls)
	g.efLog.record(push.Seq(), problems)
	return out
}

func (g *SidecarGenerators) patchClusters(push *model.PushContext, _ *model.Proxy, ps *envoyfilter.Patches, pc envoyfilter.PatchContext, cs []*clusterCfg) []*clusterCfg {
	if ps.Empty() {
		return cs
	}
	out, problems := envoyfilter.PatchClusters(ps, pc, cs)
	g.efLog.record(push.Seq(), problems)
	return out
}

func (g *SidecarGenerators) patchRoutes(push *model.PushContext, _ *model.Proxy, ps *envoyfilter.Patches, pc envoyfilter.PatchContext, rs []*routeCfg) []*routeCfg {
	if ps.Empty() {
		return rs
	}
	out, problems := envoyfilter.PatchRoutes(ps, pc, rs)
	g.efLog.record(push.Seq(), problems)
	return out
}

// exists tells the names a generated set already has.
func exists(res xds.Generated) func(string) bool {
	names := make(map[string]bool, len(res.Resources))
	for _, r := range res.Resources {
		names[r.Name] = true
	}
	return func(n string) bool { return names[n] }
}

// addedListeners are the listeners EnvoyFilter ADD patches create.
func (g *SidecarGenerators) addedListeners(push *model.PushContext, _ *model.Proxy, ps *envoyfilter.Patches, have xds.Generated) xds.Generated {
	if ps.Empty() {
		return xds.Generated{}
	}
	ls, problems := envoyfilter.AddedListeners(ps, exists(have))
	g.efLog.record(push.Seq(), problems)
	return toResources(g.enc, xds.ListenerType, ls, listenerName)
}

// addedClusters are the clusters EnvoyFilter ADD patches create.
func (g *SidecarGenerators) addedClusters(push *model.PushContext, _ *model.Proxy, ps *envoyfilter.Patches, have xds.Generated) xds.Generated {
	if ps.Empty() {
		return xds.Generated{}
	}
	cs, problems := envoyfilter.AddedClusters(ps, exists(have))
	g.efLog.record(push.Seq(), problems)
	return toResources(g.enc, xds.ClusterType, cs, func(c *clusterCfg) string { return c.Name })
}

// EnvoyFilterProblems returns a /debug/warningz provider: EnvoyFilter
// patches that could not be converted, patches dropped on a resource
// because they did not apply or left it invalid (in the current snapshot),
// and, for every connected proxy, pairs of its patches whose result
// depends on their order.
func (g *SidecarGenerators) EnvoyFilterProblems(src ConnectedProxies) func() []diag.Problem {
	return func() []diag.Problem {
		seen := map[string]diag.Problem{}
		add := func(ps []envoyfilter.Problem) {
			for _, p := range ps {
				seen[p.String()] = p.Diag("envoyfilter")
			}
		}
		add(g.ef.Problems())
		add(g.efLog.list())
		if push := src.PushContext(); push != nil {
			for _, c := range src.Connections() {
				if p := c.Proxy(); p != nil {
					add(envoyfilter.Conflicts(g.ef.Patches(push, p)))
				}
			}
		}
		out := make([]diag.Problem, 0, len(seen))
		for _, p := range seen {
			out = append(out, p)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Object+out[i].Message < out[j].Object+out[j].Message })
		return out
	}
}
