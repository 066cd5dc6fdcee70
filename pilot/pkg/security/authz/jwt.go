package authz

import (
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// Request principals, audiences, presenters and claims are read from the
// dynamic metadata the jwt_authn filter (built by the authn package, placed
// between the CUSTOM and the other authorization filters) writes:
// payloadInMetadata "payload" under the filter's name. Istio 1.31 has no
// istio_authn filter; it reads jwt_authn's metadata directly.
const (
	jwtFilter  = "envoy.filters.http.jwt_authn"
	jwtPayload = "payload"
)

// jwtClaim matches one top-level claim of the payload (iss, sub).
func jwtClaim(claim string, m *matcherpb.StringMatcher) *matcherpb.MetadataMatcher {
	return metadataMatch(jwtFilter, []string{jwtPayload, claim}, stringValue(m))
}

// jwtClaimValues matches the claim at path (nested claims one key per
// level) when it equals one of the values or, for a list claim (aud,
// groups, space-delimited scope), when one of its elements does.
func jwtClaimValues(path []string, v *matcherpb.ValueMatcher) *matcherpb.MetadataMatcher {
	either := &matcherpb.ValueMatcher{MatchPattern: &matcherpb.ValueMatcher_OrMatch{OrMatch: &matcherpb.OrMatcher{
		ValueMatchers: []*matcherpb.ValueMatcher{listContains(v), v},
	}}}
	return metadataMatch(jwtFilter, append([]string{jwtPayload}, path...), either)
}
