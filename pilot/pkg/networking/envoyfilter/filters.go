package envoyfilter

import (
	"slices"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/networking/protoconv"
)

// httpConnectionManager is the network filter whose HTTP filters
// HTTP_FILTER patches change.
const httpConnectionManager = "envoy.filters.network.http_connection_manager"

// patchNetworkFilters applies the NETWORK_FILTER patches of a chain:
// first the structural ones in order, then the MERGE ones, filter by
// filter, then the HTTP filters of connection managers.
func (s *session) patchNetworkFilters(ctx networking.EnvoyFilter_PatchContext, l *listenerv3.Listener,
	fc *listenerv3.FilterChain, res string,
) ([]*listenerv3.Filter, bool) {
	list, changed := fc.GetFilters(), false
	for _, p := range s.ps.list(ctx, networking.EnvoyFilter_NETWORK_FILTER) {
		if p.op == networking.EnvoyFilter_Patch_MERGE || !listenerMatch(l, p) || !filterChainMatch(l, fc, p) {
			continue
		}
		var c bool
		v, _ := p.value.(*listenerv3.Filter) // nil for REMOVE
		list, c = listOp(list, p.op, v, hasFilterMatch(p), func(f *listenerv3.Filter) bool {
			return networkFilterMatch(f, p)
		})
		changed = changed || c
	}
	copied := changed
	for i, f := range list {
		nf := s.patchNetworkFilter(ctx, l, fc, f, res)
		if nf == f {
			continue
		}
		if !copied {
			list, copied = slices.Clone(list), true
		}
		list[i], changed = nf, true
	}
	return list, changed
}

// patchNetworkFilter applies the NETWORK_FILTER MERGE patches to one
// filter (its name, and its typed_config merged, as Istio does: a filter
// without a typed_config is left alone), then, for a connection manager,
// the HTTP_FILTER patches.
func (s *session) patchNetworkFilter(ctx networking.EnvoyFilter_PatchContext, l *listenerv3.Listener,
	fc *listenerv3.FilterChain, f *listenerv3.Filter, res string,
) *listenerv3.Filter {
	cur := f
	for _, p := range s.ps.list(ctx, networking.EnvoyFilter_NETWORK_FILTER) {
		if p.op != networking.EnvoyFilter_Patch_MERGE || !listenerMatch(l, p) || !filterChainMatch(l, fc, p) ||
			!networkFilterMatch(cur, p) || cur.GetTypedConfig() == nil {
			continue
		}
		user := p.value.(*listenerv3.Filter)
		tc := cur.GetTypedConfig()
		if user.GetTypedConfig() != nil {
			var ok bool
			if tc, ok = s.mergeFilterConfig(p, res+" filter "+cur.GetName(), tc); !ok {
				continue
			}
		}
		next := shallow(cur)
		if user.GetName() != "" {
			next.Name = user.GetName()
		}
		next.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: tc}
		cur = next
	}
	if cur.GetName() == httpConnectionManager {
		cur = s.patchHTTPFilters(ctx, l, fc, cur, res)
	}
	return cur
}

// patchHTTPFilters applies the HTTP_FILTER patches to a connection
// manager's HTTP filters: the structural ones in order, then the MERGE
// ones, filter by filter. A connection manager without a typed_config, or
// one that does not decode, is left alone.
func (s *session) patchHTTPFilters(ctx networking.EnvoyFilter_PatchContext, l *listenerv3.Listener,
	fc *listenerv3.FilterChain, f *listenerv3.Filter, res string,
) *listenerv3.Filter {
	var ps []*patch
	for _, p := range s.ps.list(ctx, networking.EnvoyFilter_HTTP_FILTER) {
		if listenerMatch(l, p) && filterChainMatch(l, fc, p) && networkFilterMatch(f, p) {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 || f.GetTypedConfig() == nil {
		return f
	}
	h := &hcm.HttpConnectionManager{}
	if err := f.GetTypedConfig().UnmarshalTo(h); err != nil {
		return f
	}
	list, changed := h.GetHttpFilters(), false
	for _, p := range ps {
		if p.op == networking.EnvoyFilter_Patch_MERGE {
			continue
		}
		var c bool
		v, _ := p.value.(*hcm.HttpFilter) // nil for REMOVE
		list, c = listOp(list, p.op, v, hasHTTPFilterMatch(p), func(hf *hcm.HttpFilter) bool {
			return httpFilterMatch(hf, p)
		})
		changed = changed || c
	}
	for i, hf := range list {
		nhf := s.mergeHTTPFilter(ps, hf, res)
		if nhf == hf {
			continue
		}
		// h was decoded for this call: its list is ours, unless a
		// structural patch built a new one (also ours).
		list[i], changed = nhf, true
	}
	if !changed {
		return f
	}
	h.HttpFilters = list
	nf := shallow(f)
	nf.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: protoconv.MessageToAny(h)}
	return nf
}

// mergeHTTPFilter applies the HTTP_FILTER MERGE patches of ps to one HTTP
// filter: its name, and its typed_config merged (a filter without one is
// left alone).
func (s *session) mergeHTTPFilter(ps []*patch, hf *hcm.HttpFilter, res string) *hcm.HttpFilter {
	cur := hf
	for _, p := range ps {
		if p.op != networking.EnvoyFilter_Patch_MERGE || !httpFilterMatch(cur, p) || cur.GetTypedConfig() == nil {
			continue
		}
		user := p.value.(*hcm.HttpFilter)
		tc := cur.GetTypedConfig()
		if user.GetTypedConfig() != nil {
			var ok bool
			if tc, ok = s.mergeFilterConfig(p, res+" http filter "+cur.GetName(), tc); !ok {
				continue
			}
		}
		next := shallow(cur)
		if user.GetName() != "" {
			next.Name = user.GetName()
		}
		next.ConfigType = &hcm.HttpFilter_TypedConfig{TypedConfig: tc}
		cur = next
	}
	return cur
}

// hasFilterMatch: the patch names a network filter (Istio checks that the
// filter match is present; its name is then compared as is, even empty).
func hasFilterMatch(p *patch) bool { return p.match.GetListener().GetFilterChain().GetFilter() != nil }

func networkFilterMatch(f *listenerv3.Filter, p *patch) bool {
	return !hasFilterMatch(p) || p.match.GetListener().GetFilterChain().GetFilter().GetName() == f.GetName()
}

// hasHTTPFilterMatch: the patch names an HTTP filter (a sub filter).
func hasHTTPFilterMatch(p *patch) bool {
	return hasFilterMatch(p) && p.match.GetListener().GetFilterChain().GetFilter().GetSubFilter() != nil
}

func httpFilterMatch(hf *hcm.HttpFilter, p *patch) bool {
	return !hasHTTPFilterMatch(p) || p.match.GetListener().GetFilterChain().GetFilter().GetSubFilter().GetName() == hf.GetName()
}
