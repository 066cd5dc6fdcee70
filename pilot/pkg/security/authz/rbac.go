package authz

import (
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// Constructors of RBAC permissions and principals.

func permissionAny() *rbacpb.Permission {
	return &rbacpb.Permission{Rule: &rbacpb.Permission_Any{Any: true}}
}

func permissionAnd(ps []*rbacpb.Permission) *rbacpb.Permission {
	return &rbacpb.Permission{Rule: &rbacpb.Permission_AndRules{AndRules: &rbacpb.Permission_Set{Rules: ps}}}
}

func permissionOr(ps []*rbacpb.Permission) *rbacpb.Permission {
	return &rbacpb.Permission{Rule: &rbacpb.Permission_OrRules{OrRules: &rbacpb.Permission_Set{Rules: ps}}}
}

func permissionNot(p *rbacpb.Permission) *rbacpb.Permission {
	return &rbacpb.Permission{Rule: &rbacpb.Permission_NotRule{NotRule: p}}
}

func principalAny() *rbacpb.Principal {
	return &rbacpb.Principal{Identifier: &rbacpb.Principal_Any{Any: true}}
}

func principalAnd(ps []*rbacpb.Principal) *rbacpb.Principal {
	return &rbacpb.Principal{Identifier: &rbacpb.Principal_AndIds{AndIds: &rbacpb.Principal_Set{Ids: ps}}}
}

func principalOr(ps []*rbacpb.Principal) *rbacpb.Principal {
	return &rbacpb.Principal{Identifier: &rbacpb.Principal_OrIds{OrIds: &rbacpb.Principal_Set{Ids: ps}}}
}

func principalNot(p *rbacpb.Principal) *rbacpb.Principal {
	return &rbacpb.Principal{Identifier: &rbacpb.Principal_NotId{NotId: p}}
}

func principalMetadata(m *matcherpb.MetadataMatcher) *rbacpb.Principal {
	return &rbacpb.Principal{Identifier: &rbacpb.Principal_Metadata{Metadata: m}}
}

func permissionMetadata(m *matcherpb.MetadataMatcher) *rbacpb.Permission {
	return &rbacpb.Permission{Rule: &rbacpb.Permission_Metadata{Metadata: m}}
}

// peerIdentity matches the peer's SPIFFE identity: the principal of the
// mTLS connection, or on HBONE/waypoint chains the io.istio.peer_principal
// filter state.
func peerIdentity(m *matcherpb.StringMatcher, fromFilterState bool) *rbacpb.Principal {
	if fromFilterState {
		return &rbacpb.Principal{Identifier: &rbacpb.Principal_FilterState{FilterState: &matcherpb.FilterStateMatcher{
			Key:     "io.istio.peer_principal",
			Matcher: &matcherpb.FilterStateMatcher_StringMatch{StringMatch: m},
		}}}
	}
	return &rbacpb.Principal{Identifier: &rbacpb.Principal_Authenticated_{Authenticated: &rbacpb.Principal_Authenticated{PrincipalName: m}}}
}

// matchNever is the policy of a policy without rules: nothing matches, so
// an ALLOW policy without rules allows nothing and a DENY one denies
// nothing.
func matchNever() *rbacpb.Policy {
	return &rbacpb.Policy{
		Permissions: []*rbacpb.Permission{permissionNot(permissionAny())},
		Principals:  []*rbacpb.Principal{principalNot(principalAny())},
	}
}

// cidr is the Envoy range of an IP or CIDR ("10.1.2.3" is a /32, an IPv6
// address a /128). The address is kept as written (not masked), as Istio.
func cidr(addr string) (*core.CidrRange, error) {
	p, err := parsePrefix(addr)
	if err != nil {
		return nil, err
	}
	return &core.CidrRange{AddressPrefix: p.Addr().String(), PrefixLen: uint32Value(uint32(p.Bits()))}, nil
}
