package validation

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	security "istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
)

// ValidatePeerAuthentication checks a PeerAuthentication.
func ValidatePeerAuthentication(cfg config.Config) (Warning, error) {
	in, ok := cfg.Spec.(*security.PeerAuthentication)
	if !ok {
		return nil, secCastError("PeerAuthentication", cfg.Spec)
	}
	if in == nil {
		in = &security.PeerAuthentication{}
	}
	r := &Report{}
	secWorkloadSelector(r, secSpec.Field("selector"), in.GetSelector())
	if m := in.GetMtls(); m != nil && !secEnumKnown(m.GetMode(), security.PeerAuthentication_MutualTLS_Mode_name) {
		r.Errorf(secSpec.Field("mtls").Field("mode"), "unknown mTLS mode %d", int32(m.GetMode()))
	}
	plp := secSpec.Field("portLevelMtls")
	if in.PortLevelMtls != nil && len(in.PortLevelMtls) == 0 {
		r.Errorf(plp, "port level mTLS, if defined, must have at least one element")
	}
	if len(in.GetPortLevelMtls()) > 0 && len(in.GetSelector().GetMatchLabels()) == 0 {
		r.Errorf(plp, "portLevelMtls requires selector: mesh/namespace peer authentication cannot have port level mTLS")
	}
	for _, port := range secSortedKeys(in.GetPortLevelMtls()) {
		p := plp.Key(fmt.Sprint(port))
		if port < 1 || port > 65535 {
			r.Errorf(p, "port must be in range 1..65535, found %d", port)
		}
		m := in.GetPortLevelMtls()[port]
		if m == nil {
			r.Errorf(p, "port level mTLS entry must set mtls")
			continue
		}
		if !secEnumKnown(m.GetMode(), security.PeerAuthentication_MutualTLS_Mode_name) {
			r.Errorf(p.Field("mode"), "unknown mTLS mode %d", int32(m.GetMode()))
		}
	}
	return r.Result()
}

// ValidateRequestAuthentication checks a RequestAuthentication.
func ValidateRequestAuthentication(cfg config.Config) (Warning, error) {
	in, ok := cfg.Spec.(*security.RequestAuthentication)
	if !ok {
		return nil, secCastError("RequestAuthentication", cfg.Spec)
	}
	if in == nil {
		in = &security.RequestAuthentication{}
	}
	r := &Report{}
	secPolicyAttachment(r, secSpec, in.GetSelector(), in.GetTargetRef(), in.GetTargetRefs())
	if len(in.GetJwtRules()) > 4096 {
		r.Warnf(secSpec.Field("jwtRules"), "at most 4096 jwtRules may be set, found %d%s", len(in.GetJwtRules()), secCRDRule)
	}
	for i, rule := range in.GetJwtRules() {
		p := secSpec.Field("jwtRules").Index(i)
		if rule == nil {
			r.Warnf(p, "jwtRule is null (Istio's validation accepts it)")
			continue
		}
		secJWTRule(r, p, rule)
	}
	return r.Result()
}

// secCRDRule ends the warnings for rules of the RequestAuthentication CRD
// schema that Istio's validation does not check: a Kubernetes API server
// with Istio's CRDs rejects such an object, Istio's validation accepts it.
const secCRDRule = " (a rule of the CRD schema, which Istio's validation does not check)"

// secJWTRule checks one JWT rule. It rejects what Istio's validation
// rejects; the CRD schema's further rules are warnings.
func secJWTRule(r *Report, p Path, rule *security.JWTRule) {
	if rule.GetIssuer() == "" && rule.GetJwksUri() == "" {
		r.Errorf(p.Field("issuer"), "issuer or jwksUri must be non-empty string")
	}
	for i, a := range rule.GetAudiences() {
		if a == "" {
			r.Errorf(p.Field("audiences").Index(i), "audience must be non-empty string")
		}
	}
	if rule.GetJwksUri() != "" && rule.GetJwks() != "" {
		r.Warnf(p, "only one of jwks or jwksUri can be set"+secCRDRule)
	}
	if u := rule.GetJwksUri(); u != "" {
		secJwksURI(r, p.Field("jwksUri"), u)
	}
	if rule.GetJwks() != "" {
		private, err := secJwks(rule.GetJwks())
		r.Add(p.Field("jwks"), err)
		for _, i := range private {
			r.Warnf(p.Field("jwks"), "jwks key at index %d contains private key material; only public keys are used for verification", i)
		}
	}
	for i, h := range rule.GetFromHeaders() {
		hp := p.Field("fromHeaders").Index(i)
		if h == nil {
			r.Errorf(hp, "location header name must be non-null")
			continue
		}
		if h.GetName() == "" {
			r.Errorf(hp.Field("name"), "location header name must be non-empty string")
		}
	}
	for i, v := range rule.GetFromParams() {
		if v == "" {
			r.Errorf(p.Field("fromParams").Index(i), "location query must be non-empty string")
		}
	}
	for i, v := range rule.GetFromCookies() {
		if v == "" {
			r.Errorf(p.Field("fromCookies").Index(i), "cookie name must be non-empty string")
		}
	}
	for i, c := range rule.GetOutputClaimToHeaders() {
		cp := p.Field("outputClaimToHeaders").Index(i)
		if c == nil {
			r.Errorf(cp, "outputClaimToHeaders must not be null")
			continue
		}
		if c.GetClaim() == "" || c.GetHeader() == "" {
			at := cp.Field("claim")
			if c.GetClaim() != "" {
				at = cp.Field("header")
			}
			r.Errorf(at, "outputClaimToHeaders header and claim value must be non-empty string")
			continue
		}
		r.Add(cp.Field("header"), netCheckHeaderName(c.GetHeader()))
	}
	for i, c := range rule.GetSpaceDelimitedClaims() {
		if c == "" {
			r.Warnf(p.Field("spaceDelimitedClaims").Index(i), "empty value not allowed"+secCRDRule)
		}
	}
	if rule.GetTimeout() != nil {
		r.Add(p.Field("timeout"), netCheckDuration(rule.GetTimeout()))
	}
}

// secJwksURI requires, as Istio does, a URL of scheme http or https whose
// port, if any, is a number. The CRD schema's length limit, a missing host
// and a port out of range are warnings.
func secJwksURI(r *Report, p Path, raw string) {
	if len(raw) > 2048 {
		r.Warnf(p, "jwksUri must be at most 2048 characters"+secCRDRule)
	}
	u, err := url.Parse(raw)
	if err != nil {
		r.Errorf(p, "invalid jwksUri %q: %v", raw, err)
		return
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		r.Errorf(p, "url must have scheme http:// or https://, URI scheme %q is not supported", u.Scheme)
		return
	}
	if u.Hostname() == "" {
		r.Warnf(p, "jwksUri %q has no host; the keys cannot be fetched", raw)
	}
	if port := u.Port(); port != "" {
		n, err := strconv.Atoi(port)
		switch {
		case err != nil:
			r.Errorf(p, "jwksUri %q has an invalid port %q: %v", raw, port, err)
		case n < 1 || n > 65535:
			r.Warnf(p, "jwksUri %q has port %d, out of range 1..65535; the keys cannot be fetched", raw, n)
		}
	}
}

// secJwks accepts a JSON Web Key or a JSON Web Key Set; it returns the
// indexes of the keys that hold private key material (a private exponent
// or key, or a symmetric key).
func secJwks(raw string) (private []int, err error) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		return nil, fmt.Errorf("jwks parse error: %v", err)
	}
	keys, isSet := doc["keys"]
	if !isSet {
		if _, ok := doc["kty"].(string); !ok {
			return nil, fmt.Errorf("jwks parse error: key has no \"kty\"")
		}
		if secPrivateJWK(doc) {
			private = append(private, 0)
		}
		return private, nil
	}
	list, ok := keys.([]any)
	if !ok {
		return nil, fmt.Errorf("jwks parse error: \"keys\" must be a list")
	}
	for i, k := range list {
		obj, ok := k.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("jwks parse error: keys[%d] is not an object", i)
		}
		if _, ok := obj["kty"].(string); !ok {
			return nil, fmt.Errorf("jwks parse error: keys[%d] has no \"kty\"", i)
		}
		if secPrivateJWK(obj) {
			private = append(private, i)
		}
	}
	return private, nil
}

// secPrivateJWK reports whether a JSON Web Key holds private key material.
func secPrivateJWK(k map[string]any) bool {
	if k["kty"] == "oct" {
		return true
	}
	_, d := k["d"]
	return d
}
