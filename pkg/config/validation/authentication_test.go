package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/durationpb"
	security "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pkg/config/validation"
)

func TestValidatePeerAuthentication(t *testing.T) {
	sel := &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "httpbin"}}
	strict := &security.PeerAuthentication_MutualTLS{Mode: security.PeerAuthentication_MutualTLS_STRICT}
	cases := []secCase{
		{name: "mesh wide strict", spec: &security.PeerAuthentication{Mtls: strict}},
		{name: "empty", spec: &security.PeerAuthentication{}},
		{name: "typed nil", spec: (*security.PeerAuthentication)(nil)},
		{name: "wrong type", spec: &security.RequestAuthentication{}, wantErr: []string{"cannot cast to PeerAuthentication"}},
		{name: "port level with selector", spec: &security.PeerAuthentication{
			Selector: sel, Mtls: strict,
			PortLevelMtls: map[uint32]*security.PeerAuthentication_MutualTLS{
				8080: {Mode: security.PeerAuthentication_MutualTLS_DISABLE},
				9090: {},
			},
		}},
		{name: "port level without selector", spec: &security.PeerAuthentication{
			PortLevelMtls: map[uint32]*security.PeerAuthentication_MutualTLS{8080: strict},
		}, wantErr: []string{"spec.portLevelMtls: portLevelMtls requires selector"}},
		{name: "port level with empty selector", spec: &security.PeerAuthentication{
			Selector:      &typev1beta1.WorkloadSelector{},
			PortLevelMtls: map[uint32]*security.PeerAuthentication_MutualTLS{8080: strict},
		}, wantErr: []string{"portLevelMtls requires selector"}, wantWarn: []string{"workload selector specified without labels"}},
		{name: "bad ports and missing mtls", spec: &security.PeerAuthentication{
			Selector: sel,
			PortLevelMtls: map[uint32]*security.PeerAuthentication_MutualTLS{
				0: strict, 70000: strict, 8080: nil,
			},
		}, wantErr: []string{
			"spec.portLevelMtls[0]: port must be in range 1..65535",
			"spec.portLevelMtls[70000]: port must be in range 1..65535",
			"spec.portLevelMtls[8080]: port level mTLS entry must set mtls",
		}},
		{name: "empty port level map", spec: &security.PeerAuthentication{
			Selector: sel, PortLevelMtls: map[uint32]*security.PeerAuthentication_MutualTLS{},
		}, wantErr: []string{"spec.portLevelMtls: port level mTLS, if defined, must have at least one element"}},
		{name: "unknown mode", spec: &security.PeerAuthentication{
			Mtls: &security.PeerAuthentication_MutualTLS{Mode: 42},
		}, wantErr: []string{"spec.mtls.mode: unknown mTLS mode 42"}},
		// Istio rejects empty keys and wildcards in selectors, not labels
		// that are no Kubernetes labels.
		{name: "invalid selector label warns", spec: &security.PeerAuthentication{
			Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "bad value!"}},
		}, wantWarn: []string{"spec.selector.matchLabels[app]: invalid label value", "the selector matches no workload"}},
		{name: "empty and wildcard selector keys", spec: &security.PeerAuthentication{
			Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"": "a", "app*": "b", "v": "c*"}},
		}, wantErr: []string{
			`spec.selector.matchLabels: empty key is not supported in selector: "=a"`,
			`spec.selector.matchLabels[app*]: wildcard is not supported in selector: "app*=b"`,
			`spec.selector.matchLabels[v]: wildcard is not supported in selector: "v=c*"`,
		}},
	}
	secRun(t, validation.ValidatePeerAuthentication, cases)
}

func TestValidateRequestAuthentication(t *testing.T) {
	sel := &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "httpbin"}}
	jwks := `{"keys":[{"kty":"RSA","e":"AQAB","n":"xyz"}]}`
	cases := []secCase{
		{name: "valid", spec: &security.RequestAuthentication{
			Selector: sel,
			JwtRules: []*security.JWTRule{{
				Issuer: "https://issuer.example.com", JwksUri: "https://issuer.example.com:8443/jwks",
				Audiences:            []string{"aud"},
				FromHeaders:          []*security.JWTHeader{{Name: "x-jwt", Prefix: "Bearer "}},
				FromParams:           []string{"token"},
				OutputClaimToHeaders: []*security.ClaimToHeader{{Header: "x-sub", Claim: "sub"}},
				Timeout:              durationpb.New(5e9),
			}, {Issuer: "local", Jwks: jwks}},
		}},
		{name: "jwksUri only", spec: &security.RequestAuthentication{
			JwtRules: []*security.JWTRule{{JwksUri: "http://keys.example.com/jwks"}},
		}},
		{name: "wrong type", spec: &security.AuthorizationPolicy{}, wantErr: []string{"cannot cast to RequestAuthentication"}},
		{name: "typed nil", spec: (*security.RequestAuthentication)(nil)},
		{name: "issuer missing", spec: &security.RequestAuthentication{JwtRules: []*security.JWTRule{{}}},
			wantErr: []string{"spec.jwtRules[0].issuer: issuer or jwksUri must be non-empty string"}},
		// Istio's validation accepts a null rule.
		{name: "null rule", spec: &security.RequestAuthentication{JwtRules: []*security.JWTRule{nil}},
			wantWarn: []string{"spec.jwtRules[0]: jwtRule is null (Istio's validation accepts it)"}},
		{name: "bad jwksUri scheme", spec: &security.RequestAuthentication{
			JwtRules: []*security.JWTRule{{Issuer: "a", JwksUri: "ftp://keys.example.com"}},
		}, wantErr: []string{"spec.jwtRules[0].jwksUri: url must have scheme http:// or https://"}},
		{name: "jwksUri without host", spec: &security.RequestAuthentication{
			JwtRules: []*security.JWTRule{{Issuer: "a", JwksUri: "https:///jwks"}},
		}, wantWarn: []string{"spec.jwtRules[0].jwksUri: jwksUri \"https:///jwks\" has no host; the keys cannot be fetched"}},
		{name: "jwksUri port out of range", spec: &security.RequestAuthentication{
			JwtRules: []*security.JWTRule{{Issuer: "a", JwksUri: "https://k.example.com:70000/jwks"}},
		}, wantWarn: []string{"spec.jwtRules[0].jwksUri: jwksUri \"https://k.example.com:70000/jwks\" has port 70000, out of range 1..65535"}},
		{name: "jwksUri port not a number", spec: &security.RequestAuthentication{
			JwtRules: []*security.JWTRule{{Issuer: "a", JwksUri: "https://k.example.com:99999999999999999999/jwks"}},
		}, wantErr: []string{"spec.jwtRules[0].jwksUri: jwksUri \"https://k.example.com:99999999999999999999/jwks\" has an invalid port"}},
		// Rules of the CRD schema that Istio's validation does not check
		// (pkg/config/validation/testdata/crds/reqauth-invalid.yaml).
		{name: "jwks and jwksUri", spec: &security.RequestAuthentication{
			JwtRules: []*security.JWTRule{{Issuer: "a", JwksUri: "https://k.example.com", Jwks: jwks}},
		}, wantWarn: []string{"spec.jwtRules[0]: only one of jwks or jwksUri can be set (a rule of the CRD schema, which Istio's validation does not check)"}},
		{name: "long jwksUri", spec: &security.RequestAuthentication{
			JwtRules: []*security.JWTRule{{Issuer: "a", JwksUri: "https://k.example.com/" + strings.Repeat("k", 2048)}},
		}, wantWarn: []string{"spec.jwtRules[0].jwksUri: jwksUri must be at most 2048 characters (a rule of the CRD schema"}},
		{name: "empty space delimited claim", spec: &security.RequestAuthentication{
			JwtRules: []*security.JWTRule{{Issuer: "a", SpaceDelimitedClaims: []string{"scope", ""}}},
		}, wantWarn: []string{"spec.jwtRules[0].spaceDelimitedClaims[1]: empty value not allowed (a rule of the CRD schema"}},
		{name: "too many rules", spec: &security.RequestAuthentication{JwtRules: manyJWTRules(4097)},
			wantWarn: []string{"spec.jwtRules: at most 4096 jwtRules may be set, found 4097 (a rule of the CRD schema"}},
		{name: "bad jwks", spec: &security.RequestAuthentication{
			JwtRules: []*security.JWTRule{{Issuer: "a", Jwks: "not json"}, {Issuer: "b", Jwks: `{"keys":[{}]}`}},
		}, wantErr: []string{"spec.jwtRules[0].jwks: jwks parse error", "spec.jwtRules[1].jwks: jwks parse error: keys[0] has no \"kty\""}},
		{name: "locations and claims", spec: &security.RequestAuthentication{
			JwtRules: []*security.JWTRule{{
				Issuer:      "a",
				Audiences:   []string{""},
				FromHeaders: []*security.JWTHeader{{}, nil},
				FromParams:  []string{""},
				FromCookies: []string{""},
				OutputClaimToHeaders: []*security.ClaimToHeader{
					{Header: "x-ok", Claim: ""}, {Header: "bad header", Claim: "sub"}, {Claim: "sub"}, nil,
				},
				Timeout: durationpb.New(0),
			}},
		}, wantErr: []string{
			"spec.jwtRules[0].audiences[0]: audience must be non-empty string",
			"spec.jwtRules[0].fromHeaders[0].name: location header name must be non-empty string",
			"spec.jwtRules[0].fromHeaders[1]: location header name must be non-null",
			"spec.jwtRules[0].fromParams[0]: location query must be non-empty string",
			"spec.jwtRules[0].fromCookies[0]: cookie name must be non-empty string",
			"spec.jwtRules[0].outputClaimToHeaders[0].claim: outputClaimToHeaders header and claim value must be non-empty string",
			"spec.jwtRules[0].outputClaimToHeaders[1].header: header name bad header is not a valid header name",
			"spec.jwtRules[0].outputClaimToHeaders[2].header: outputClaimToHeaders header and claim value must be non-empty string",
			"spec.jwtRules[0].outputClaimToHeaders[3]: outputClaimToHeaders must not be null",
			"spec.jwtRules[0].timeout: duration must be greater than 1ms",
		}},
		{name: "selector and targetRef", spec: &security.RequestAuthentication{
			Selector:  sel,
			TargetRef: &typev1beta1.PolicyTargetReference{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: "gw"},
		}, wantErr: []string{"spec.targetRef: only one of targetRefs or workloadSelector can be set"}},
	}
	secRun(t, validation.ValidateRequestAuthentication, cases)
}

func manyJWTRules(n int) []*security.JWTRule {
	rules := make([]*security.JWTRule, n)
	for i := range rules {
		rules[i] = &security.JWTRule{Issuer: "a"}
	}
	return rules
}
