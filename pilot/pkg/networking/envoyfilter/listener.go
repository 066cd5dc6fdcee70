package envoyfilter

import (
	"slices"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	networking "istio.io/api/networking/v1alpha3"
)

// Names Istio gives its virtual listeners; listener port matches of
// patches below the listener level look at their filter chains'
// destination ports instead.
const (
	virtualInbound  = "virtualInbound"
	virtualOutbound = "virtualOutbound"
)

// PatchListeners applies the LISTENER, LISTENER_FILTER, FILTER_CHAIN,
// NETWORK_FILTER and HTTP_FILTER patches to a proxy's listeners, and the
// route patches of the SIDECAR_INBOUND context to the route configurations
// inline in the inbound connection managers of sidecars (where Istio
// applies them). Each listener is patched in its context: GATEWAY for a
// router proxy; for a sidecar SIDECAR_INBOUND for virtualInbound and
// listeners of the INBOUND traffic direction, SIDECAR_OUTBOUND for the
// others. Listeners without a name (and removed ones) are left out; added
// listeners come last: the outbound (or gateway) ones, then the inbound
// ones. The input is not modified; see the package's consistency contract.
func PatchListeners(ps *Patches, pc PatchContext, listeners []*listenerv3.Listener) ([]*listenerv3.Listener, []Problem) {
	if ps.Empty() {
		return listeners, nil
	}
	s := &session{ps: ps, pc: pc}
	out := make([]*listenerv3.Listener, 0, len(listeners))
	names := make(map[string]bool, len(listeners))
	for _, l := range listeners {
		if l == nil || l.GetName() == "" {
			continue
		}
		if nl, removed := s.patchListener(s.listenerContext(l), l); !removed {
			out = append(out, nl)
			names[nl.GetName()] = true
		}
	}
	if !pc.SkipAdds {
		out = append(out, s.addedListeners(func(n string) bool { return names[n] })...)
	}
	return out, s.result()
}

// AddedListeners returns the listeners the LISTENER ADD patches define,
// for a caller that patches a proxy's listeners in several calls (with
// PatchContext.SkipAdds): the outbound (or gateway) ones, then the inbound
// ones. One whose name exists (exists) or was added already is left out
// and reported. The messages are shared: read-only.
func AddedListeners(ps *Patches, exists func(name string) bool) ([]*listenerv3.Listener, []Problem) {
	if ps.Empty() {
		return nil, nil
	}
	s := &session{ps: ps}
	return s.addedListeners(exists), s.result()
}

// addContexts are the contexts ADD patches add resources for: a patch
// without a context adds for SIDECAR_OUTBOUND and GATEWAY only.
func (ps *Patches) addContexts() []networking.EnvoyFilter_PatchContext {
	if ps.gateway {
		return []networking.EnvoyFilter_PatchContext{networking.EnvoyFilter_GATEWAY}
	}
	return []networking.EnvoyFilter_PatchContext{networking.EnvoyFilter_SIDECAR_OUTBOUND, networking.EnvoyFilter_SIDECAR_INBOUND}
}

// adds lists the ADD patches of applyTo in the order they add.
func (ps *Patches) adds(applyTo networking.EnvoyFilter_ApplyTo) []*patch {
	var out []*patch
	for _, ctx := range ps.addContexts() {
		for _, p := range ps.list(ctx, applyTo) {
			if p.op == networking.EnvoyFilter_Patch_ADD &&
				(p.match.GetContext() != networking.EnvoyFilter_ANY || ctx != networking.EnvoyFilter_SIDECAR_INBOUND) {
				out = append(out, p)
			}
		}
	}
	return out
}

func (s *session) listenerContext(l *listenerv3.Listener) networking.EnvoyFilter_PatchContext {
	switch {
	case s.ps.gateway:
		return networking.EnvoyFilter_GATEWAY
	case l.GetName() == virtualInbound || l.GetTrafficDirection() == core.TrafficDirection_INBOUND:
		return networking.EnvoyFilter_SIDECAR_INBOUND
	}
	return networking.EnvoyFilter_SIDECAR_OUTBOUND
}

// addedListeners are the listeners ADD patches add. One whose name is
// taken is left out (beyond Istio, which sends both and has the proxy
// reject the response).
func (s *session) addedListeners(exists func(string) bool) []*listenerv3.Listener {
	var out []*listenerv3.Listener
	added := map[string]bool{}
	for _, p := range s.ps.adds(networking.EnvoyFilter_LISTENER) {
		l := p.value.(*listenerv3.Listener)
		if added[l.GetName()] || (exists != nil && exists(l.GetName())) {
			s.drop(p, "listener "+l.GetName(), "a listener of that name exists already")
			continue
		}
		added[l.GetName()] = true
		out = append(out, l)
	}
	return out
}

// patchListener applies the patches of ctx to one listener, in Istio's
// order: the inline inbound routes (patched when Istio builds them), the
// LISTENER patches, the listener filters, then each filter chain.
func (s *session) patchListener(ctx networking.EnvoyFilter_PatchContext, l *listenerv3.Listener) (*listenerv3.Listener, bool) {
	res := "listener " + l.GetName()
	cur := s.patchInlineRoutes(ctx, l)
	owned := cur != l
	for _, p := range s.ps.list(ctx, networking.EnvoyFilter_LISTENER) {
		if !listenerMatch(cur, p) {
			continue
		}
		switch {
		case p.op == networking.EnvoyFilter_Patch_REMOVE:
			return nil, true
		case isMerge(p.op):
			if next, ok := mergeWhole(s, p, res, cur); ok {
				cur, owned = next, true
			}
		}
	}
	own := func() {
		if !owned {
			cur, owned = shallow(cur), true
		}
	}
	if lf, changed := s.patchListenerFilters(ctx, cur, res); changed {
		own()
		cur.ListenerFilters = lf
	}
	chains, def, changed := s.patchFilterChains(ctx, cur)
	if changed {
		own()
		cur.FilterChains, cur.DefaultFilterChain = chains, def
	}
	return cur, false
}

// patchListenerFilters applies the LISTENER_FILTER patches in order.
func (s *session) patchListenerFilters(ctx networking.EnvoyFilter_PatchContext, l *listenerv3.Listener, res string) ([]*listenerv3.ListenerFilter, bool) {
	list, changed := l.GetListenerFilters(), false
	for _, p := range s.ps.list(ctx, networking.EnvoyFilter_LISTENER_FILTER) {
		if !listenerMatch(l, p) {
			continue
		}
		name := p.match.GetListener().GetListenerFilter()
		match := func(f *listenerv3.ListenerFilter) bool { return name == "" || f.GetName() == name }
		value, _ := p.value.(*listenerv3.ListenerFilter) // nil for REMOVE
		if p.op != networking.EnvoyFilter_Patch_MERGE {
			var c bool
			list, c = listOp(list, changed, p.op, value, name != "", match)
			changed = changed || c
			continue
		}
		// MERGE needs a listener filter match, and then (as Istio does)
		// merges into every listener filter with a typed_config; it never
		// renames one.
		if name == "" || value.GetTypedConfig() == nil {
			continue
		}
		merged, ok := s.mergeListenerFilters(p, res, list)
		if ok && merged != nil {
			list, changed = merged, true
		}
	}
	return list, changed
}

// mergeListenerFilters merges a LISTENER_FILTER MERGE into every listener
// filter with a typed_config: a new list, or nil when nothing changed; ok
// is false when the patch is left out.
func (s *session) mergeListenerFilters(p *patch, res string, list []*listenerv3.ListenerFilter) ([]*listenerv3.ListenerFilter, bool) {
	var out []*listenerv3.ListenerFilter
	for i, f := range list {
		if f.GetTypedConfig() == nil {
			continue
		}
		tc, ok := s.mergeFilterConfig(p, res+" listener filter "+f.GetName(), f.GetTypedConfig())
		if !ok {
			return nil, false
		}
		if tc == f.GetTypedConfig() {
			continue
		}
		if out == nil {
			out = slices.Clone(list)
		}
		nf := shallow(f)
		nf.ConfigType = &listenerv3.ListenerFilter_TypedConfig{TypedConfig: tc}
		out[i] = nf
	}
	return out, true
}

// patchFilterChains patches each filter chain with filters and the default
// chain, appends the FILTER_CHAIN ADD patches, and leaves out removed
// chains and, as Istio does, chains without filters.
func (s *session) patchFilterChains(ctx networking.EnvoyFilter_PatchContext, l *listenerv3.Listener) (
	[]*listenerv3.FilterChain, *listenerv3.FilterChain, bool,
) {
	chains, changed := l.GetFilterChains(), false
	set := func(i int, fc *listenerv3.FilterChain) {
		if !changed {
			chains, changed = slices.Clone(chains), true
		}
		chains[i] = fc
	}
	for i, fc := range l.GetFilterChains() {
		if fc.Filters == nil {
			set(i, nil)
			continue
		}
		if nfc, removed := s.patchFilterChain(ctx, l, fc); removed {
			set(i, nil)
		} else if nfc != fc {
			set(i, nfc)
		}
	}
	def := l.GetDefaultFilterChain()
	if def.GetFilters() != nil {
		nd, removed := s.patchFilterChain(ctx, l, def)
		if removed {
			nd = nil
		}
		if nd != def {
			def, changed = nd, true
		}
	}
	for _, p := range s.ps.list(ctx, networking.EnvoyFilter_FILTER_CHAIN) {
		if p.op == networking.EnvoyFilter_Patch_ADD && listenerMatch(l, p) {
			if !changed {
				chains, changed = slices.Clone(chains), true
			}
			chains = append(chains, p.value.(*listenerv3.FilterChain))
		}
	}
	if changed {
		chains = slices.DeleteFunc(chains, func(fc *listenerv3.FilterChain) bool { return fc == nil || fc.Filters == nil })
	}
	return chains, def, changed
}

// patchFilterChain applies the FILTER_CHAIN REMOVE and MERGE patches to a
// chain, then its network filters.
func (s *session) patchFilterChain(ctx networking.EnvoyFilter_PatchContext, l *listenerv3.Listener, fc *listenerv3.FilterChain) (
	*listenerv3.FilterChain, bool,
) {
	res := "listener " + l.GetName() + " filter chain " + chainName(fc)
	cur, owned := fc, false
	for _, p := range s.ps.list(ctx, networking.EnvoyFilter_FILTER_CHAIN) {
		if !listenerMatch(l, p) || !filterChainMatch(l, cur, p) {
			continue
		}
		switch {
		case p.op == networking.EnvoyFilter_Patch_REMOVE:
			return nil, true
		case isMerge(p.op):
			if next, ok := s.mergeFilterChain(p, res, cur); ok {
				cur, owned = next, true
			}
		}
	}
	if filters, changed := s.patchNetworkFilters(ctx, l, cur, res); changed {
		if !owned {
			cur = shallow(cur)
		}
		cur.Filters = filters
	}
	return cur, false
}

// mergeFilterChain merges a FILTER_CHAIN MERGE into a copy of fc. A value
// with a transport socket of the chain's transport socket name merges only
// that socket's typed_config (the rest of the value is ignored, as Istio
// ignores it); otherwise the whole value merges.
func (s *session) mergeFilterChain(p *patch, res string, fc *listenerv3.FilterChain) (*listenerv3.FilterChain, bool) {
	pts := p.value.(*listenerv3.FilterChain).GetTransportSocket()
	ts := fc.GetTransportSocket()
	if pts == nil || ts == nil || pts.GetName() != ts.GetName() {
		if !s.wholeSocket(p, res) {
			return fc, false
		}
		return mergeWhole(s, p, res, fc)
	}
	merged, ok := s.mergeSocket(p, res, ts)
	if !ok {
		return fc, false
	}
	next := shallow(fc)
	next.TransportSocket = merged
	return next, true
}

// wholeSocket checks the transport socket typed_config of a MERGE value
// that lands whole (the target has no socket of that name): it must be a
// valid message on its own.
func (s *session) wholeSocket(p *patch, res string) bool {
	if p.merged == nil {
		return true
	}
	if err := validateShallow(p.merged); err != nil {
		s.drop(p, res, "its transport socket typed_config is not a valid %s: %v", p.merged.ProtoReflect().Descriptor().FullName(), err)
		return false
	}
	return true
}

func chainName(fc *listenerv3.FilterChain) string {
	if fc.GetName() != "" {
		return fc.GetName()
	}
	return "(unnamed)"
}

// listenerMatch checks the listener part of a match: name and port. Below
// the listener level, virtualInbound and virtualOutbound match any port
// (filterChainMatch checks their chains' destination port instead).
func listenerMatch(l *listenerv3.Listener, p *patch) bool {
	m := p.match.GetListener()
	if m == nil {
		return true
	}
	if m.GetName() != "" && m.GetName() != l.GetName() {
		return false
	}
	if p.applyTo != networking.EnvoyFilter_LISTENER && isVirtual(l) {
		return true
	}
	if m.GetPortNumber() != 0 {
		sa := l.GetAddress().GetSocketAddress()
		if sa == nil || sa.GetPortValue() != m.GetPortNumber() {
			return false
		}
	}
	return true
}

func isVirtual(l *listenerv3.Listener) bool {
	return l.GetName() == virtualInbound || l.GetName() == virtualOutbound
}

// filterChainMatch checks the filter chain part of a match (the listener
// matched already).
func filterChainMatch(l *listenerv3.Listener, fc *listenerv3.FilterChain, p *patch) bool {
	lm := p.match.GetListener()
	if lm == nil {
		return true
	}
	fcm := fc.GetFilterChainMatch()
	if isVirtual(l) && lm.GetPortNumber() > 0 && fcm.GetDestinationPort().GetValue() != lm.GetPortNumber() {
		return false
	}
	m := lm.GetFilterChain()
	if m == nil {
		return true
	}
	if m.GetName() != "" && m.GetName() != fc.GetName() {
		return false
	}
	if m.GetSni() != "" && !slices.Contains(fcm.GetServerNames(), m.GetSni()) {
		return false
	}
	if m.GetTransportProtocol() != "" && (fcm == nil || fcm.GetTransportProtocol() != m.GetTransportProtocol()) {
		return false
	}
	if m.GetApplicationProtocols() != "" {
		if fcm == nil {
			return false
		}
		for _, proto := range strings.Split(m.GetApplicationProtocols(), ",") {
			if !slices.Contains(fcm.GetApplicationProtocols(), proto) {
				return false
			}
		}
	}
	if m.GetDestinationPort() > 0 && fcm.GetDestinationPort().GetValue() != m.GetDestinationPort() {
		return false
	}
	return true
}
