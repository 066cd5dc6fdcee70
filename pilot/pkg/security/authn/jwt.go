package authn

import (
	"slices"
	"sort"
	"strconv"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/emptypb"
	"istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// JwtFilterName is the name of Envoy's JWT authentication HTTP filter.
const JwtFilterName = "envoy.filters.http.jwt_authn"

// JwtPayloadMetadataKey is where the filter puts a verified token's payload
// in the dynamic metadata of envoy.filters.http.jwt_authn; authorization
// rules on request.auth.* read it from there.
const JwtPayloadMetadataKey = "payload"

// PublicOnlyJwks is the key set Istio 1.31 inlines when it cannot get a
// jwksUri's keys: one RSA public key whose private key was discarded, so
// every token fails verification while requests without one still follow
// the rules (fail closed). Byte for byte Istio's, so its config hashes equal.
const PublicOnlyJwks = `{
  "keys": [
    {
      "kty": "RSA",
      "e": "AQAB",
      "n": "0xObjM0UvS_oaazjpEYlAbwctEJ4L8pH3OuTb7qth7gUwqet-EzQB4dgFdvSdMgrLnSncQGRjpEYz3F3viIbH-3EN3TxSlPNviHxeOdyiBVfumN8dMxbLvVJUpfNOnvmMxJcl-8NNjAwcOjk4otSALaYgYYyOPyvKtgVdrQr-FoubWX4yrjxW-MJ2-7OBeepUUNOsVwGV23YX03sVkkyvY3otRflkBcY3_HKpBxJl9wk2GyOShN4_PNUF9-vwfnvOXMbCDX-w4PTef4geeb_GiT40YCKHTKMSPVanGRn5GExIWmki-mmqh94-mPTJyBR74ShspL3BxPZitDL574T1w"
    }
  ]
}`

// JwksResolver gives the key sets of jwksUri values, which istiod fetches
// and inlines (Istio's default PILOT_JWT_ENABLE_REMOTE_JWKS=false). It is
// called while a push is built, so it must answer from memory: an unknown
// or not yet fetched uri returns ok false (the implementation may start a
// fetch and trigger a push once it has the keys). The returned string is
// immutable. *Resolver implements it.
type JwksResolver interface {
	Resolve(uri string) (jwks string, ok bool)
}

// IssuerJwksResolver is a JwksResolver that also finds the key set of an
// issuer through OpenID discovery (<issuer>/.well-known/openid-configuration,
// then its jwks_uri), for rules with neither jwks nor jwksUri, as Istio
// does. With a plain JwksResolver such rules get PublicOnlyJwks.
type IssuerJwksResolver interface {
	JwksResolver
	ResolveIssuer(issuer string) (jwks string, ok bool)
}

// JWTOptions are the inputs of the JWT filter besides the policies.
type JWTOptions struct {
	// Resolver resolves jwksUri values; nil resolves none.
	Resolver JwksResolver
	// ClearRouteCache makes the filter clear the route cache after
	// verification, so routes may match on claims: Istio sets it for
	// every proxy but sidecars.
	ClearRouteCache bool
}

// JwtFilter returns the envoy.filters.http.jwt_authn filter of a
// workload's RequestAuthentications (PushContext.RequestAuthentications),
// or nil when they have no rules.
func JwtFilter(policies []config.Config, o JWTOptions) *hcm.HttpFilter {
	cfg := JwtAuthentication(policies, o)
	if cfg == nil {
		return nil
	}
	return &hcm.HttpFilter{Name: JwtFilterName, ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: protoconv.MessageToAny(cfg)}}
}

// JwtAuthentication translates the rules of the RequestAuthentications as
// Istio 1.31: the rules of all policies, sorted by issuer (stably), become
// providers origins-0, origins-1, … A request is let through without a
// token, and rejected with an invalid one: the single rule on prefix "/"
// requires, for one provider, {origins-0 or allow_missing}; for several,
// any of {origins-i} or all of {origins-i or allow_missing} (the first
// alternatives let providers share a token location). CORS preflight
// requests bypass the filter. Nil when there are no rules.
func JwtAuthentication(policies []config.Config, o JWTOptions) *jwtv3.JwtAuthentication {
	var rules []*v1beta1.JWTRule
	for i := range policies {
		if spec, ok := policies[i].Spec.(*v1beta1.RequestAuthentication); ok {
			rules = append(rules, spec.GetJwtRules()...)
		}
	}
	if len(rules) == 0 {
		return nil
	}
	sort.SliceStable(rules, func(i, j int) bool { return rules[i].GetIssuer() < rules[j].GetIssuer() })

	providers := make(map[string]*jwtv3.JwtProvider, len(rules))
	var eachOrMissing, anyProvider []*jwtv3.JwtRequirement
	for i, rule := range rules {
		name := "origins-" + strconv.Itoa(i)
		providers[name] = provider(rule, o)
		eachOrMissing = append(eachOrMissing, requiresAny(providerRequirement(name), allowMissing()))
		anyProvider = append(anyProvider, providerRequirement(name))
	}
	req := eachOrMissing[0]
	if len(rules) > 1 {
		req = requiresAny(append(anyProvider, &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_RequiresAll{
			RequiresAll: &jwtv3.JwtRequirementAndList{Requirements: eachOrMissing}}})...)
	}
	return &jwtv3.JwtAuthentication{
		Providers: providers,
		Rules: []*jwtv3.RequirementRule{{
			Match:           &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			RequirementType: &jwtv3.RequirementRule_Requires{Requires: req},
		}},
		BypassCorsPreflight: true,
	}
}

// provider translates one rule. Token locations and outputs map one to
// one; the payload always goes to the "payload" metadata with scope and
// permission (plus the rule's spaceDelimitedClaims) split on spaces.
func provider(rule *v1beta1.JWTRule, o JWTOptions) *jwtv3.JwtProvider {
	p := &jwtv3.JwtProvider{
		Issuer:               rule.GetIssuer(),
		Audiences:            slices.Clone(rule.GetAudiences()),
		Forward:              rule.GetForwardOriginalToken(),
		ForwardPayloadHeader: rule.GetOutputPayloadToHeader(),
		PayloadInMetadata:    JwtPayloadMetadataKey,
		NormalizePayloadInMetadata: &jwtv3.JwtProvider_NormalizePayload{
			SpaceDelimitedClaims: spaceDelimitedClaims(rule.GetSpaceDelimitedClaims()),
		},
		ClearRouteCache: o.ClearRouteCache,
		FromParams:      slices.Clone(rule.GetFromParams()),
		FromCookies:     slices.Clone(rule.GetFromCookies()),
		JwksSourceSpecifier: &jwtv3.JwtProvider_LocalJwks{LocalJwks: &core.DataSource{
			Specifier: &core.DataSource_InlineString{InlineString: keySet(rule, o.Resolver)}}},
	}
	for _, c := range rule.GetOutputClaimToHeaders() {
		p.ClaimToHeaders = append(p.ClaimToHeaders, &jwtv3.JwtClaimToHeader{HeaderName: c.GetHeader(), ClaimName: c.GetClaim()})
	}
	for _, h := range rule.GetFromHeaders() {
		p.FromHeaders = append(p.FromHeaders, &jwtv3.JwtHeader{Name: h.GetName(), ValuePrefix: h.GetPrefix()})
	}
	return p
}

// keySet is the inline key set of a rule: its jwks, else what the resolver
// has for its jwksUri (or, without one, for its issuer by OpenID
// discovery), else PublicOnlyJwks.
func keySet(rule *v1beta1.JWTRule, r JwksResolver) string {
	if rule.GetJwks() != "" {
		return rule.GetJwks()
	}
	if r == nil {
		return PublicOnlyJwks
	}
	var jwks string
	var ok bool
	switch {
	case rule.GetJwksUri() != "":
		jwks, ok = r.Resolve(rule.GetJwksUri())
	case rule.GetIssuer() != "":
		if ir, isIssuer := r.(IssuerJwksResolver); isIssuer {
			jwks, ok = ir.ResolveIssuer(rule.GetIssuer())
		}
	}
	if !ok || jwks == "" {
		return PublicOnlyJwks
	}
	return jwks
}

// spaceDelimitedClaims returns permission and scope, with the rule's own
// claims merged in sorted and without repeats when it has any.
func spaceDelimitedClaims(extra []string) []string {
	out := []string{"permission", "scope"}
	if len(extra) == 0 {
		return out
	}
	out = append(out, extra...)
	slices.Sort(out)
	return slices.Compact(out)
}

func providerRequirement(name string) *jwtv3.JwtRequirement {
	return &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_ProviderName{ProviderName: name}}
}

func allowMissing() *jwtv3.JwtRequirement {
	return &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_AllowMissing{AllowMissing: &emptypb.Empty{}}}
}

func requiresAny(reqs ...*jwtv3.JwtRequirement) *jwtv3.JwtRequirement {
	return &jwtv3.JwtRequirement{RequiresType: &jwtv3.JwtRequirement_RequiresAny{
		RequiresAny: &jwtv3.JwtRequirementOrList{Requirements: reqs}}}
}
