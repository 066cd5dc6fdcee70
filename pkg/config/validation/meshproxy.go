package validation

import meshconfig "istio.io/api/mesh/v1alpha1"

// ValidateMeshProxyConfig checks a ProxyConfig as mesh config's
// defaultConfig is checked, such as the one a pod's proxy.istio.io/config
// annotation makes (the injector rejects the pod when it is invalid).
func ValidateMeshProxyConfig(pc *meshconfig.ProxyConfig) error {
	r := &Report{}
	secMeshProxyConfig(r, Path(""), pc)
	_, err := r.Result()
	return err
}
