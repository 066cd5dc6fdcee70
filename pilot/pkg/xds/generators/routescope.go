package generators

import (
	"sort"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// routeLabels are, for one snapshot, the label keys a sidecar's route
// configurations can depend on: those VirtualService matches select on
// (sourceLabels) and those DestinationRule workload selectors select on
// (their consistent hashes become route hash policies). Two sidecars of one
// sidecar scope that agree on these keys get the same routes, so the cache
// keys routes by them instead of by every label: otherwise each workload,
// with its own app and version labels, would build and hold its own copy
// of every route configuration.
type routeLabels struct {
	seq  uint64
	keys []string // sorted
}

func (g *SidecarGenerators) routeLabelKeys(push *model.PushContext) *routeLabels {
	if cur := g.rl.Load(); cur != nil && cur.seq == push.Seq() {
		return cur
	}
	seen := map[string]struct{}{}
	add := func(l map[string]string) {
		for k := range l {
			seen[k] = struct{}{}
		}
	}
	for _, c := range push.VirtualServices() {
		vs, ok := c.Spec.(*networking.VirtualService)
		if !ok {
			continue
		}
		for _, h := range vs.GetHttp() {
			for _, m := range h.GetMatch() {
				add(m.GetSourceLabels())
			}
		}
		for _, t := range vs.GetTcp() {
			for _, m := range t.GetMatch() {
				add(m.GetSourceLabels())
			}
		}
		for _, t := range vs.GetTls() {
			for _, m := range t.GetMatch() {
				add(m.GetSourceLabels())
			}
		}
	}
	for _, c := range push.DestinationRules() {
		if dr, ok := c.Spec.(*networking.DestinationRule); ok {
			add(dr.GetWorkloadSelector().GetMatchLabels())
		}
	}
	rl := &routeLabels{seq: push.Seq(), keys: make([]string, 0, len(seen))}
	for k := range seen {
		rl.keys = append(rl.keys, k)
	}
	sort.Strings(rl.keys)
	if cur := g.rl.Load(); cur == nil || cur.seq < rl.seq {
		g.rl.Store(rl)
	}
	return rl
}

// routeScope is the part of a sidecar its route configurations depend on:
// its sidecar scope (visible services, outbound policy), its namespace
// (VirtualService visibility, short host names) and the values of the
// labels routes select on.
func (g *SidecarGenerators) routeScope(push *model.PushContext, proxy *model.Proxy) string {
	var b strings.Builder
	b.WriteString(scopeID(push, proxy))
	b.WriteByte('|')
	b.WriteString(proxy.ConfigNamespace)
	b.WriteByte('|')
	for _, k := range g.routeLabelKeys(push).keys {
		if v, ok := proxy.Labels[k]; ok {
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(v)
			b.WriteByte(',')
		}
	}
	return b.String()
}
