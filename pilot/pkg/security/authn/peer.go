package authn

import (
	"sort"

	"istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
)

// MTLSOptions are the mesh settings EffectiveMTLS needs.
type MTLSOptions struct {
	// RootNamespace is the mesh root namespace (meshConfig.rootNamespace).
	// A workload-selector PeerAuthentication there applies to no workload:
	// Istio ignores it, and so does EffectiveMTLS when handed one.
	RootNamespace string
}

// Policy is the effective mTLS of one workload. It is a value computed
// from the policies; Ports is read-only once returned.
type Policy struct {
	// Workload is the mode of every port without a port-level setting, and
	// of the inbound passthrough.
	Workload Mode `json:"workload"`
	// Ports are the port-level modes of the workload-selector policy, keyed
	// by the workload's (container, target) port, never the service port.
	Ports map[uint32]Mode `json:"ports,omitempty"`
}

// Mode returns the mode of a workload (target) port: its port-level
// setting, else the workload's mode. Port 0 stands for "any other port"
// (the passthrough); validation keeps 0 out of portLevelMtls.
func (p Policy) Mode(port uint32) Mode {
	if m, ok := p.Ports[port]; ok {
		return m
	}
	return p.Workload
}

// PortLevel returns the ports with a port-level setting, ascending.
func (p Policy) PortLevel() []uint32 {
	out := make([]uint32, 0, len(p.Ports))
	for port := range p.Ports {
		out = append(out, port)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// LayerPeerAuthentications sorts the PeerAuthentications that apply to a
// workload (as PushContext.PeerAuthentications returns them: the workload
// namespace's, then the root namespace's, any order) into Istio's levels:
// the oldest namespace-wide policy of the root namespace (mesh-wide), the
// oldest namespace-wide policy of another namespace (the workload's), the
// oldest selector policy outside the root namespace. A policy with an empty
// selector is namespace-wide. Ties in age keep the earlier in the list. The
// result points into policies.
func LayerPeerAuthentications(policies []config.Config, rootNamespace string) model.LayeredPolicies {
	var out model.LayeredPolicies
	older := func(cur *config.Config, cand *config.Config) *config.Config {
		if cur == nil || cand.CreationTimestamp.Before(cur.CreationTimestamp) {
			return cand
		}
		return cur
	}
	for i := range policies {
		cfg := &policies[i]
		spec, ok := cfg.Spec.(*v1beta1.PeerAuthentication)
		if !ok {
			continue
		}
		switch {
		case len(spec.GetSelector().GetMatchLabels()) == 0 && cfg.Namespace == rootNamespace:
			out.Root = older(out.Root, cfg)
		case len(spec.GetSelector().GetMatchLabels()) == 0:
			out.Namespace = older(out.Namespace, cfg)
		case cfg.Namespace != rootNamespace:
			out.Workload = older(out.Workload, cfg)
		}
	}
	return out
}

// EffectiveMTLS resolves the layers of a workload's PeerAuthentications as
// Istio 1.31 does: PERMISSIVE, overridden by the mesh-wide mode, then the
// namespace-wide mode, then the workload policy's mode, each level's UNSET
// (or absent mtls) keeping the mode of the level above. Port-level settings
// come from the workload policy only (Istio ignores portLevelMtls
// elsewhere); an UNSET port takes the workload's resolved mode.
func EffectiveMTLS(layered model.LayeredPolicies, opts MTLSOptions) Policy {
	out := Policy{Workload: ModePermissive}
	apply := func(cfg *config.Config) *v1beta1.PeerAuthentication {
		if cfg == nil {
			return nil
		}
		spec, ok := cfg.Spec.(*v1beta1.PeerAuthentication)
		if !ok {
			return nil
		}
		if m, ok := modeOf(spec.GetMtls()); ok {
			out.Workload = m
		}
		return spec
	}
	apply(layered.Root)
	apply(layered.Namespace)
	if w := layered.Workload; w != nil && (opts.RootNamespace == "" || w.Namespace != opts.RootNamespace) {
		if spec := apply(w); spec != nil && len(spec.GetPortLevelMtls()) > 0 {
			out.Ports = make(map[uint32]Mode, len(spec.GetPortLevelMtls()))
			for port, setting := range spec.GetPortLevelMtls() {
				m, ok := modeOf(setting)
				if !ok {
					m = out.Workload
				}
				out.Ports[port] = m
			}
		}
	}
	return out
}

// ProxyMTLS is EffectiveMTLS of the layered list: the effective mTLS of the
// workload the policies were selected for.
func ProxyMTLS(policies []config.Config, opts MTLSOptions) Policy {
	return EffectiveMTLS(LayerPeerAuthentications(policies, opts.RootNamespace), opts)
}
