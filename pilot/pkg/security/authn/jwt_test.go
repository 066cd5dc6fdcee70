package authn_test

import (
	"strings"
	"testing"

	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	"google.golang.org/protobuf/encoding/prototext"
	"istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

func ra(name string, rules ...*v1beta1.JWTRule) config.Config {
	return config.Config{
		Meta: config.Meta{GroupVersionKind: gvk.MustFromKind(kind.RequestAuthentication), Name: name, Namespace: "ns"},
		Spec: &v1beta1.RequestAuthentication{JwtRules: rules},
	}
}

// uriOnly resolves uris but not issuers.
type uriOnly map[string]string

func (u uriOnly) Resolve(uri string) (string, bool) { v, ok := u[uri]; return v, ok }

func inline(t *testing.T, cfg *jwtv3.JwtAuthentication, provider string) string {
	t.Helper()
	p := cfg.GetProviders()[provider]
	if p == nil {
		t.Fatalf("no provider %s in %v", provider, cfg)
	}
	return p.GetLocalJwks().GetInlineString()
}

func TestJwtKeySources(t *testing.T) {
	rules := []*v1beta1.JWTRule{
		{Issuer: "a", Jwks: `{"keys":["inline"]}`, JwksUri: "https://a/keys"},
		{Issuer: "b", JwksUri: "https://b/keys"},
		{Issuer: "c", JwksUri: "https://c/missing"},
		{Issuer: "d"},
		{},
	}
	cases := []struct {
		name     string
		resolver authn.JwksResolver
		want     []string // origins-0..4
	}{
		{"no resolver", nil, []string{`{"keys":["inline"]}`, authn.PublicOnlyJwks, authn.PublicOnlyJwks, authn.PublicOnlyJwks, authn.PublicOnlyJwks}},
		{"uris only", uriOnly{"https://b/keys": "B", "https://c/missing": ""},
			[]string{`{"keys":["inline"]}`, "B", authn.PublicOnlyJwks, authn.PublicOnlyJwks, authn.PublicOnlyJwks}},
		{"issuers too", stubResolver{uris: map[string]string{"https://b/keys": "B"}, issuers: map[string]string{"d": "D", "": "never"}},
			[]string{`{"keys":["inline"]}`, "B", authn.PublicOnlyJwks, "D", authn.PublicOnlyJwks}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := authn.JwtAuthentication([]config.Config{ra("r", rules...)}, authn.JWTOptions{Resolver: c.resolver})
			// Rules sort by issuer: "" first.
			order := []string{"origins-1", "origins-2", "origins-3", "origins-4", "origins-0"}
			for i, want := range c.want {
				if got := inline(t, cfg, order[i]); got != want {
					t.Errorf("rule %d (%s): %q, want %q", i, order[i], got, want)
				}
			}
		})
	}
}

func TestJwtRequirements(t *testing.T) {
	if authn.JwtAuthentication(nil, authn.JWTOptions{}) != nil || authn.JwtFilter([]config.Config{ra("empty")}, authn.JWTOptions{}) != nil {
		t.Error("no rules must give no filter")
	}
	one := authn.JwtAuthentication([]config.Config{ra("r", &v1beta1.JWTRule{Issuer: "x", Jwks: "{}"})}, authn.JWTOptions{})
	if or := one.GetRules()[0].GetRequires().GetRequiresAny().GetRequirements(); len(or) != 2 ||
		or[0].GetProviderName() != "origins-0" || or[1].GetAllowMissing() == nil {
		t.Errorf("one provider: %s", prototext.Format(one))
	}
	if one.GetRules()[0].GetMatch().GetPrefix() != "/" || !one.GetBypassCorsPreflight() {
		t.Errorf("rule: %s", prototext.Format(one))
	}
	two := authn.JwtAuthentication([]config.Config{ra("r1", &v1beta1.JWTRule{Issuer: "y", Jwks: "{}"}), ra("r2", &v1beta1.JWTRule{Issuer: "x", Jwks: "{}"})},
		authn.JWTOptions{})
	any := two.GetRules()[0].GetRequires().GetRequiresAny().GetRequirements()
	if len(any) != 3 || any[0].GetProviderName() != "origins-0" || any[1].GetProviderName() != "origins-1" ||
		len(any[2].GetRequiresAll().GetRequirements()) != 2 {
		t.Fatalf("two providers: %s", prototext.Format(two))
	}
	for i, r := range any[2].GetRequiresAll().GetRequirements() {
		or := r.GetRequiresAny().GetRequirements()
		if len(or) != 2 || or[0].GetProviderName() == "" || or[1].GetAllowMissing() == nil {
			t.Errorf("requires_all[%d]: %s", i, prototext.Format(r))
		}
	}
	if two.GetProviders()["origins-0"].GetIssuer() != "x" {
		t.Errorf("providers not sorted by issuer: %v", two.GetProviders())
	}
}

func TestJwtSpaceDelimitedClaims(t *testing.T) {
	cfg := authn.JwtAuthentication([]config.Config{ra("r", &v1beta1.JWTRule{Issuer: "x", Jwks: "{}", SpaceDelimitedClaims: []string{"scope", "b", "a", "b"}})},
		authn.JWTOptions{})
	got := cfg.GetProviders()["origins-0"].GetNormalizePayloadInMetadata().GetSpaceDelimitedClaims()
	if strings.Join(got, ",") != "a,b,permission,scope" {
		t.Errorf("claims %v", got)
	}
}

func TestJwtInputNotModified(t *testing.T) {
	rules := []*v1beta1.JWTRule{{Issuer: "z", Jwks: "{}"}, {Issuer: "a", Jwks: "{}"}}
	cfg := ra("r", rules...)
	authn.JwtAuthentication([]config.Config{cfg}, authn.JWTOptions{})
	if got := cfg.Spec.(*v1beta1.RequestAuthentication).JwtRules; got[0].Issuer != "z" {
		t.Error("the policy's rules were reordered")
	}
}
