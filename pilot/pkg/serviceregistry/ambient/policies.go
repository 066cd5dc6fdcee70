package ambient

import (
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	securityapi "istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/workloadapi/security"
)

// workloadPolicy is an AuthorizationPolicy as ztunnel enforces it.
type workloadPolicy struct {
	// Namespace/Name of the AuthorizationPolicy.
	Namespace, Name string
	// Authorization is nil when ztunnel does not take the policy (an
	// unsupported action, an unsupported dry run); Message says why.
	Authorization *security.Authorization
	// Selector is the policy's matchLabels; nil for namespace-wide and
	// mesh-wide policies, which are not listed on workloads.
	Selector map[string]string
	// Message is the ZtunnelAccepted reason for a policy ztunnel rejects or
	// enforces partially (HTTP attributes dropped); "" when fully taken.
	Message string
}

func (p workloadPolicy) ResourceName() string { return p.Namespace + "/" + p.Name }

func (p workloadPolicy) Equals(o workloadPolicy) bool {
	return p.Namespace == o.Namespace && p.Name == o.Name && proto.Equal(p.Authorization, o.Authorization) &&
		(p.Selector == nil) == (o.Selector == nil) && maps.Equal(p.Selector, o.Selector) && p.Message == o.Message
}

const staticStrictPolicy = "istio_converted_static_strict"

// convertedPeerAuthName is the name of a converted PeerAuthentication.
func convertedPeerAuthName(name string) string { return "converted_peer_authentication_" + name }

func (x *Index) buildWorkloadPolicy(ctx krt.HandlerContext, cfg config.Config) *workloadPolicy {
	spec, _ := cfg.Spec.(*securityapi.AuthorizationPolicy)
	if spec == nil {
		return nil
	}
	mesh := x.fetchMesh(ctx)
	pol, msg := convertAuthorizationPolicy(mesh.RootNamespace, cfg, spec)
	if pol == nil && msg == "" {
		return nil
	}
	return &workloadPolicy{Namespace: cfg.Namespace, Name: cfg.Name, Authorization: pol, Message: msg,
		Selector: spec.GetSelector().GetMatchLabels()}
}

// workloadPolicies are the names of the policies a workload lists: the
// selector policies of its namespace and of the root namespace that select
// its labels (sorted), then the converted PeerAuthentications that apply.
// As in Istio, a workload without labels is selected by every selector
// policy of those namespaces.
func (x *Index) workloadPolicies(ctx krt.HandlerContext, mesh MeshSettings, lbls map[string]string, ns string) []string {
	matched := krt.Fetch(ctx, x.policies, krt.FilterGeneric(func(o any) bool {
		p := o.(workloadPolicy)
		if p.Authorization == nil || p.Selector == nil || (p.Namespace != mesh.RootNamespace && p.Namespace != ns) {
			return false
		}
		return len(lbls) == 0 || subsetOf(p.Selector, lbls)
	}))
	names := make([]string, 0, len(matched))
	for _, p := range matched {
		names = append(names, p.Authorization.Namespace+"/"+p.Authorization.Name)
	}
	slices.Sort(names)
	pas := krt.Fetch(ctx, x.in.PeerAuthentications, krt.FilterGeneric(func(o any) bool {
		c := o.(config.Config)
		pa, _ := c.Spec.(*securityapi.PeerAuthentication)
		if pa == nil {
			return false
		}
		if c.Namespace == mesh.RootNamespace && pa.Selector == nil {
			return true
		}
		if c.Namespace != ns {
			return false
		}
		return pa.Selector == nil || labelsSubset(pa.Selector.MatchLabels, lbls)
	}))
	return append(names, convertedPeerAuthentications(mesh.RootNamespace, pas)...)
}

// labelsSubset is Istio's selector test: an empty selector matches all,
// nothing matches empty labels otherwise.
func labelsSubset(sel, lbls map[string]string) bool {
	if len(sel) == 0 {
		return true
	}
	return len(lbls) >= len(sel) && subsetOf(sel, lbls)
}

func peerAuth(c config.Config) *securityapi.PeerAuthentication {
	pa, _ := c.Spec.(*securityapi.PeerAuthentication)
	return pa
}

// oldest is the first created of cs (the first listed on a tie).
func oldest(cs []config.Config) *config.Config {
	var o *config.Config
	for i := range cs {
		if o == nil || cs[i].CreationTimestamp.Before(o.CreationTimestamp) {
			o = &cs[i]
		}
	}
	return o
}

func modeOf(m *securityapi.PeerAuthentication_MutualTLS) securityapi.PeerAuthentication_MutualTLS_Mode {
	return m.GetMode()
}

func isStrict(m *securityapi.PeerAuthentication_MutualTLS) bool {
	return modeOf(m) == securityapi.PeerAuthentication_MutualTLS_STRICT
}

func isUnset(m *securityapi.PeerAuthentication_MutualTLS) bool {
	return modeOf(m) == securityapi.PeerAuthentication_MutualTLS_UNSET
}

func isLax(m *securityapi.PeerAuthentication_MutualTLS) bool {
	return modeOf(m) == securityapi.PeerAuthentication_MutualTLS_PERMISSIVE ||
		modeOf(m) == securityapi.PeerAuthentication_MutualTLS_DISABLE
}

// convertedPeerAuthentications are the policy names the effective
// PeerAuthentication of a workload adds: the static STRICT policy when the
// workload is strict, and/or its converted workload policy when port-level
// modes make exceptions.
func convertedPeerAuthentications(root string, cs []config.Config) []string {
	var meshCfg, nsCfg, wlCfg *config.Config
	for i := range cs {
		c := &cs[i]
		pa := peerAuth(*c)
		switch {
		case pa.Selector == nil || len(pa.Selector.MatchLabels) == 0:
			if c.Namespace == root {
				if meshCfg == nil || c.CreationTimestamp.Before(meshCfg.CreationTimestamp) {
					meshCfg = c
				}
			} else if nsCfg == nil || c.CreationTimestamp.Before(nsCfg.CreationTimestamp) {
				nsCfg = c
			}
		case c.Namespace != root:
			if wlCfg == nil || c.CreationTimestamp.Before(wlCfg.CreationTimestamp) {
				wlCfg = c
			}
		}
	}
	strict := false
	if meshCfg != nil {
		strict = isStrict(peerAuth(*meshCfg).Mtls)
	}
	if nsCfg != nil && !isUnset(peerAuth(*nsCfg).Mtls) {
		strict = isStrict(peerAuth(*nsCfg).Mtls)
	}
	portPolicy := ""
	if wlCfg != nil {
		wl := peerAuth(*wlCfg)
		wlKey := wlCfg.Namespace + "/" + convertedPeerAuthName(wlCfg.Name)
		if isStrict(wl.Mtls) {
			strict = true
		}
		if isLax(wl.Mtls) {
			strict = false
		}
		if wl.PortLevelMtls != nil {
			anyPort := func(f func(*securityapi.PeerAuthentication_MutualTLS) bool) bool {
				for _, m := range wl.PortLevelMtls {
					if f(m) {
						return true
					}
				}
				return false
			}
			isPermissive := func(m *securityapi.PeerAuthentication_MutualTLS) bool {
				return modeOf(m) == securityapi.PeerAuthentication_MutualTLS_PERMISSIVE
			}
			switch {
			case isStrict(wl.Mtls):
				if anyPort(isLax) {
					portPolicy, strict = wlKey, false
				}
			case isLax(wl.Mtls):
				if anyPort(isStrict) {
					portPolicy = wlKey
				}
			case strict:
				if anyPort(isPermissive) {
					portPolicy, strict = wlKey, false
				}
			default:
				if anyPort(isStrict) {
					portPolicy = wlKey
				}
			}
		}
	}
	var out []string
	if strict {
		out = append(out, root+"/"+staticStrictPolicy)
	}
	if portPolicy != "" {
		out = append(out, portPolicy)
	}
	slices.Sort(out)
	return out
}

func presence() *security.StringMatch {
	return &security.StringMatch{MatchType: &security.StringMatch_Presence{Presence: &emptypb.Empty{}}}
}

// staticStrict is the DENY policy for traffic without a peer identity that
// STRICT workloads list.
func staticStrict(root string) *security.Authorization {
	return &security.Authorization{Name: staticStrictPolicy, Namespace: root, Scope: security.Scope_WORKLOAD_SELECTOR,
		Action: security.Action_DENY, Groups: []*security.Group{{Rules: []*security.Rules{{
			Matches: []*security.Match{{NotPrincipals: []*security.StringMatch{presence()}}}}}}}}
}

func (x *Index) buildAuthorizations() krt.Collection[Authorization] {
	fromPolicies := krt.NewCollection(x.policies, func(_ krt.HandlerContext, p workloadPolicy) *Authorization {
		if p.Authorization == nil {
			return nil
		}
		return &Authorization{Name: p.Authorization.Namespace + "/" + p.Authorization.Name, Proto: p.Authorization}
	}, x.krtOpts("ambient/authz-authorizations")...)
	fromPeerAuths := krt.NewCollection(x.in.PeerAuthentications, x.buildPeerAuthPolicy,
		x.krtOpts("ambient/peerauth-authorizations")...)
	static := krt.NewCollection(x.mesh.AsCollection(), func(ctx krt.HandlerContext, m MeshSettings) *Authorization {
		if len(krt.Fetch(ctx, x.in.PeerAuthentications)) == 0 {
			return nil
		}
		a := staticStrict(m.RootNamespace)
		return &Authorization{Name: m.RootNamespace + "/" + staticStrictPolicy, Proto: a}
	}, x.krtOpts("ambient/static-strict")...)
	return krt.JoinCollection([]krt.Collection[Authorization]{fromPolicies, fromPeerAuths, static},
		x.krtOpts("ambient/authorizations")...)
}

// buildPeerAuthPolicy converts a workload PeerAuthentication with
// port-level modes (outside the root namespace) into the DENY policy of its
// exceptions, merged with the namespace's or mesh's STRICT mode.
func (x *Index) buildPeerAuthPolicy(ctx krt.HandlerContext, cfg config.Config) *Authorization {
	pa := peerAuth(cfg)
	mesh := x.fetchMesh(ctx)
	if pa == nil || cfg.Namespace == mesh.RootNamespace || pa.Selector == nil || len(pa.PortLevelMtls) == 0 {
		return nil
	}
	nsWide := func(o any) bool {
		p := peerAuth(o.(config.Config))
		return p != nil && p.Selector == nil
	}
	var nsPA, rootPA *securityapi.PeerAuthentication
	if c := oldest(krt.Fetch(ctx, x.in.PeerAuthentications, krt.FilterNamespace(cfg.Namespace),
		krt.FilterGeneric(nsWide))); c != nil {
		nsPA = peerAuth(*c)
	}
	if c := oldest(krt.Fetch(ctx, x.in.PeerAuthentications, krt.FilterNamespace(mesh.RootNamespace),
		krt.FilterGeneric(nsWide))); c != nil {
		rootPA = peerAuth(*c)
	}
	a := convertPeerAuthentication(cfg, pa, nsPA, rootPA)
	if a == nil {
		return nil
	}
	return &Authorization{Name: a.Namespace + "/" + a.Name, Proto: a}
}

func convertPeerAuthentication(cfg config.Config, pa, nsPA, rootPA *securityapi.PeerAuthentication) *security.Authorization {
	mode := modeOf(pa.Mtls)
	var rules []*security.Rules
	var groups []*security.Group
	if mode == securityapi.PeerAuthentication_MutualTLS_STRICT {
		rules = append(rules, &security.Rules{Matches: []*security.Match{{NotPrincipals: []*security.StringMatch{presence()}}}})
	}
	var nsMtls, rootMtls *securityapi.PeerAuthentication_MutualTLS
	if nsPA != nil {
		nsMtls = nsPA.Mtls
	}
	if rootPA != nil {
		rootMtls = rootPA.Mtls
	}
	nonStrictPort := false
	for _, port := range slices.Sorted(maps.Keys(pa.PortLevelMtls)) {
		pm := pa.PortLevelMtls[port]
		switch {
		case isStrict(pm):
			// A STRICT port under a STRICT parent adds nothing.
			if isStrict(pa.Mtls) ||
				(isUnset(pa.Mtls) && nsPA != nil && isStrict(nsMtls)) ||
				((nsPA == nil || isUnset(nsMtls)) && rootPA != nil && isStrict(rootMtls)) {
				continue
			}
			groups = append(groups, &security.Group{Rules: []*security.Rules{{Matches: []*security.Match{{
				NotPrincipals: []*security.StringMatch{presence()}, DestinationPorts: []uint32{port}}}}}})
		case isLax(pm):
			if isLax(pa.Mtls) {
				continue
			}
			if mode == securityapi.PeerAuthentication_MutualTLS_UNSET && ((nsPA != nil && !isStrict(nsMtls)) ||
				(nsPA == nil && rootPA != nil && !isStrict(rootMtls)) || (nsPA == nil && rootPA == nil)) {
				continue
			}
			nonStrictPort = true
			rules = append(rules, &security.Rules{Matches: []*security.Match{{NotDestinationPorts: []uint32{port}}}})
		}
	}
	if mode == securityapi.PeerAuthentication_MutualTLS_STRICT && !nonStrictPort {
		return nil
	}
	if len(rules) == 0 && len(groups) == 0 {
		return nil
	}
	mergeStrict := (rootPA != nil && isStrict(rootMtls) && (nsPA == nil || isUnset(nsMtls) || isStrict(nsMtls))) ||
		(nsPA != nil && isStrict(nsMtls))
	if mergeStrict && nonStrictPort {
		rules = append(rules, &security.Rules{Matches: []*security.Match{{NotPrincipals: []*security.StringMatch{presence()}}}})
	}
	if len(rules) > 0 {
		groups = append(groups, &security.Group{Rules: rules})
	}
	return &security.Authorization{Name: convertedPeerAuthName(cfg.Name), Namespace: cfg.Namespace,
		Scope: security.Scope_WORKLOAD_SELECTOR, Action: security.Action_DENY, Groups: groups}
}
