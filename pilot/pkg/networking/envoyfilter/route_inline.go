package envoyfilter

import (
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/protoconv"
)

// patchInlineRoutes applies the SIDECAR_INBOUND route patches to the route
// configurations inline in the connection managers of a sidecar's inbound
// listener. Istio applies them when it builds those routes, before any
// listener patch; so does this, first thing when patching the listener.
func (s *session) patchInlineRoutes(ctx networking.EnvoyFilter_PatchContext, l *listenerv3.Listener) *listenerv3.Listener {
	if ctx != networking.EnvoyFilter_SIDECAR_INBOUND || !s.ps.hasRoutePatches(ctx) {
		return l
	}
	chains, changed := l.GetFilterChains(), false
	for i, fc := range l.GetFilterChains() {
		if nfc := s.inlineRoutesOfChain(ctx, fc); nfc != fc {
			if !changed {
				chains, changed = append([]*listenerv3.FilterChain(nil), chains...), true
			}
			chains[i] = nfc
		}
	}
	def := l.GetDefaultFilterChain()
	if def != nil {
		if nd := s.inlineRoutesOfChain(ctx, def); nd != def {
			def, changed = nd, true
		}
	}
	if !changed {
		return l
	}
	out := shallow(l)
	out.FilterChains, out.DefaultFilterChain = chains, def
	return out
}

func (s *session) inlineRoutesOfChain(ctx networking.EnvoyFilter_PatchContext, fc *listenerv3.FilterChain) *listenerv3.FilterChain {
	filters, changed := fc.GetFilters(), false
	for i, f := range fc.GetFilters() {
		if f.GetName() != httpConnectionManager || f.GetTypedConfig() == nil {
			continue
		}
		h := &hcm.HttpConnectionManager{}
		if err := f.GetTypedConfig().UnmarshalTo(h); err != nil || h.GetRouteConfig() == nil {
			continue
		}
		rc := h.GetRouteConfig()
		nrc := s.patchRouteConfiguration(ctx, rc)
		if nrc == rc {
			continue
		}
		h.RouteSpecifier = &hcm.HttpConnectionManager_RouteConfig{RouteConfig: nrc}
		nf := shallow(f)
		nf.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: protoconv.MessageToAny(h)}
		if !changed {
			filters, changed = append([]*listenerv3.Filter(nil), filters...), true
		}
		filters[i] = nf
	}
	if !changed {
		return fc
	}
	out := shallow(fc)
	out.Filters = filters
	return out
}
