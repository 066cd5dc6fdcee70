package authn

import (
	"istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// NamespacePolicies lists the policies of a kind in one namespace.
// *model.PushContext implements it; the returned slice is read-only.
type NamespacePolicies interface {
	PoliciesInNamespace(k kind.Kind, namespace string) []config.Config
}

var (
	_ NamespacePolicies = (*model.PushContext)(nil)
	_ NamespacePolicies = PeerAuthenticationsByNamespace(nil)
)

// DestinationMode is the mTLS mode a client infers for a service of
// namespace, as Istio 1.31's auto mTLS does: from the namespace-wide
// PeerAuthentication of that namespace, UNSET or absent inheriting the
// mesh-wide one of rootNamespace, PERMISSIVE when neither sets a mode.
// Workload-selector policies (and port-level settings) are never
// consulted: a workload-level DISABLE, like reviews' in the reference, still
// gets the tlsMode-istio/tlsMode-disabled transport socket matches from a
// client whose destination namespace is STRICT or PERMISSIVE.
//
// The cluster builder gives auto mTLS to a mesh-internal destination unless
// this is ModeDisable; passthrough destinations (headless services,
// PASSTHROUGH load balancing) also need every endpoint to carry
// tlsMode=istio, which the builder checks from the endpoints.
func DestinationMode(policies NamespacePolicies, rootNamespace, namespace string) Mode {
	mode := ModePermissive
	if m, ok := modeOf(oldestNamespaceWide(policies.PoliciesInNamespace(kind.PeerAuthentication, rootNamespace))); ok {
		mode = m
	}
	if namespace != rootNamespace {
		if m, ok := modeOf(oldestNamespaceWide(policies.PoliciesInNamespace(kind.PeerAuthentication, namespace))); ok {
			mode = m
		}
	}
	return mode
}

// oldestNamespaceWide returns the mtls setting of the oldest policy without
// a selector (ties keep the earlier), nil when there is none.
func oldestNamespaceWide(policies []config.Config) *v1beta1.PeerAuthentication_MutualTLS {
	var best *config.Config
	for i := range policies {
		cfg := &policies[i]
		spec, ok := cfg.Spec.(*v1beta1.PeerAuthentication)
		if !ok || len(spec.GetSelector().GetMatchLabels()) > 0 {
			continue
		}
		if best == nil || cfg.CreationTimestamp.Before(best.CreationTimestamp) {
			best = cfg
		}
	}
	if best == nil {
		return nil
	}
	return best.Spec.(*v1beta1.PeerAuthentication).GetMtls()
}

// PeerAuthenticationsByNamespace is a NamespacePolicies over a map of
// PeerAuthentications by namespace, for callers without a push context.
type PeerAuthenticationsByNamespace map[string][]config.Config

// PoliciesInNamespace returns the PeerAuthentications of ns (nil for other
// kinds).
func (n PeerAuthenticationsByNamespace) PoliciesInNamespace(k kind.Kind, ns string) []config.Config {
	if k != kind.PeerAuthentication {
		return nil
	}
	return n[ns]
}
