package envoyfilter

import (
	"slices"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/protoconv"
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
		list, c = listOp(list, changed, p.op, v, p.hasFilter, func(f *listenerv3.Filter) bool { return networkFilterMatch(f.GetName(), p) })
		changed = changed || c
	}
	for i, f := range list {
		nf := s.patchNetworkFilter(ctx, l, fc, f, res)
		if nf == f {
			continue
		}
		if !changed {
			list, changed = slices.Clone(list), true
		}
		list[i] = nf
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
	name := f.GetName()
	if f.GetTypedConfig() != nil {
		tc := &typedConfig{orig: f.GetTypedConfig()}
		renamed := false
		for _, p := range s.ps.list(ctx, networking.EnvoyFilter_NETWORK_FILTER) {
			if p.op != networking.EnvoyFilter_Patch_MERGE || !networkFilterMatch(name, p) || !listenerMatch(l, p) || !filterChainMatch(l, fc, p) {
				continue
			}
			user := p.value.(*listenerv3.Filter)
			if user.GetTypedConfig() != nil && !s.mergeTypedConfig(p, res+" filter "+name, tc) {
				continue
			}
			if user.GetName() != "" {
				name, renamed = user.GetName(), true
			}
		}
		if renamed || tc.changed {
			nf := shallow(f)
			nf.Name = name
			nf.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: tc.result()}
			f = nf
		}
	}
	if name == httpConnectionManager {
		f = s.patchHTTPFilters(ctx, l, fc, f, res)
	}
	return f
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
		if networkFilterMatch(f.GetName(), p) && listenerMatch(l, p) && filterChainMatch(l, fc, p) {
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
	// h was decoded for this call: its list is ours
	list, changed := h.GetHttpFilters(), false
	for _, p := range ps {
		if p.op == networking.EnvoyFilter_Patch_MERGE {
			continue
		}
		var c bool
		v, _ := p.value.(*hcm.HttpFilter) // nil for REMOVE
		list, c = listOp(list, true, p.op, v, p.hasSubFilter, func(hf *hcm.HttpFilter) bool { return httpFilterMatch(hf.GetName(), p) })
		changed = changed || c
	}
	for i, hf := range list {
		if nhf := s.mergeHTTPFilter(ps, hf, res); nhf != hf {
			list[i], changed = nhf, true
		}
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
	if hf.GetTypedConfig() == nil {
		return hf
	}
	name, renamed := hf.GetName(), false
	tc := &typedConfig{orig: hf.GetTypedConfig()}
	for _, p := range ps {
		if p.op != networking.EnvoyFilter_Patch_MERGE || !httpFilterMatch(name, p) {
			continue
		}
		user := p.value.(*hcm.HttpFilter)
		if user.GetTypedConfig() != nil && !s.mergeTypedConfig(p, res+" http filter "+name, tc) {
			continue
		}
		if user.GetName() != "" {
			name, renamed = user.GetName(), true
		}
	}
	if !renamed && !tc.changed {
		return hf
	}
	out := shallow(hf)
	out.Name = name
	out.ConfigType = &hcm.HttpFilter_TypedConfig{TypedConfig: tc.result()}
	return out
}

// networkFilterMatch: the patch names no network filter, or this one (a
// filter match without a name matches filters without a name).
func networkFilterMatch(name string, p *patch) bool { return !p.hasFilter || p.filterName == name }

// httpFilterMatch: the patch names no HTTP filter (sub filter), or this
// one.
func httpFilterMatch(name string, p *patch) bool {
	return !p.hasFilter || !p.hasSubFilter || p.subFilterName == name
}
