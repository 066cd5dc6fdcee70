package validation

import (
	"regexp"

	networkingv1beta1 "istio.io/api/networking/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
)

// secImageTypeRe matches what may follow "<tag>-" in an image tag.
var secImageTypeRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// secMaxProxyEnvValue is the CRD limit on one environment variable value.
const secMaxProxyEnvValue = 2048

// ValidateProxyConfig checks a ProxyConfig resource (not the MeshConfig field).
func ValidateProxyConfig(cfg config.Config) (Warning, error) {
	in, ok := cfg.Spec.(*networkingv1beta1.ProxyConfig)
	if !ok {
		return nil, secCastError("ProxyConfig", cfg.Spec)
	}
	if in == nil {
		in = &networkingv1beta1.ProxyConfig{}
	}
	r := &Report{}
	secWorkloadSelector(r, secSpec.Field("selector"), in.GetSelector())
	if c := in.GetConcurrency(); c != nil && c.GetValue() < 0 {
		r.Errorf(secSpec.Field("concurrency"), "concurrency must be greater than or equal to 0, found %d", c.GetValue())
	}
	secProxyImage(r, secSpec.Field("image"), in.GetImage())
	env := in.GetEnvironmentVariables()
	for _, k := range secSortedKeys(env) {
		p := secSpec.Field("environmentVariables").Key(k)
		if k == "" {
			r.Errorf(p, "environment variable name may not be empty")
		}
		if len(env[k]) > secMaxProxyEnvValue {
			r.Errorf(p, "environment variable value must be at most %d characters", secMaxProxyEnvValue)
		}
	}
	return r.Result()
}

// secProxyImage validates the image type, which becomes part of an image tag.
func secProxyImage(r *Report, p Path, img *networkingv1beta1.ProxyImage) {
	if img == nil || img.GetImageType() == "" {
		return
	}
	if !secImageTypeRe.MatchString(img.GetImageType()) {
		r.Errorf(p.Field("imageType"), "invalid image type %q: must be usable in an image tag "+
			"(letters, digits, '_', '.', '-'; e.g. default, debug, distroless)", img.GetImageType())
	}
}
