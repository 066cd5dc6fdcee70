package envoyfilter

import (
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	networking "istio.io/api/networking/v1alpha3"
)

// ExtensionConfigs returns the extension configurations EXTENSION_CONFIG
// ADD patches define for the requested names (ECDS), in patch order, as
// Istio does: the match context is not consulted (ECDS resources belong to
// no listener), the proxy match is. The messages are shared: read-only.
func ExtensionConfigs(ps *Patches, names []string) []*core.TypedExtensionConfig {
	if ps.Empty() || len(names) == 0 {
		return nil
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	var out []*core.TypedExtensionConfig
	for _, p := range ps.all {
		if p.applyTo != networking.EnvoyFilter_EXTENSION_CONFIG || p.op != networking.EnvoyFilter_Patch_ADD {
			continue
		}
		if ec := p.value.(*core.TypedExtensionConfig); want[ec.GetName()] {
			out = append(out, ec)
		}
	}
	return out
}
