package gateway

import (
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
)

// Prefixes of SDS resource names that credentialName may carry.
const (
	KubernetesSecretPrefix  = "kubernetes://"
	GatewaySecretPrefix     = "kubernetes-gateway://"
	ConfigMapPrefix         = "configmap://"
	BuiltinPrefix           = "builtin://"
	InvalidPrefix           = "invalid://"
	CACertSuffix            = "-cacert"
	builtinCredentialSecret = "default"
)

// ResourceName is the SDS resource a credentialName names: the name when it
// carries a known scheme, "default" (the workload's own certificate) for
// builtin://, else kubernetes://<name>.
func ResourceName(credential string) string {
	switch {
	case strings.HasPrefix(credential, BuiltinPrefix):
		return builtinCredentialSecret
	case strings.HasPrefix(credential, InvalidPrefix):
		return InvalidPrefix
	case strings.HasPrefix(credential, ConfigMapPrefix), strings.HasPrefix(credential, KubernetesSecretPrefix),
		strings.HasPrefix(credential, GatewaySecretPrefix):
		return credential
	}
	return KubernetesSecretPrefix + credential
}

// SecretRef is the Kubernetes object behind an SDS resource name.
type SecretRef struct {
	// Namespace and Name of the Secret (or ConfigMap).
	Namespace, Name string
	// ConfigMap is true for configmap:// references.
	ConfigMap bool
}

// ParseResourceName resolves an SDS resource name; kubernetes://<name>
// takes the proxy's namespace. ok is false for other schemes and malformed
// names.
func ParseResourceName(resource, proxyNamespace string) (SecretRef, bool) {
	scheme, rest, ok := strings.Cut(resource, "://")
	if !ok {
		return SecretRef{}, false
	}
	ns, name, scoped := strings.Cut(rest, "/")
	switch scheme + "://" {
	case KubernetesSecretPrefix:
		if !scoped {
			ns, name = proxyNamespace, rest
		}
	case GatewaySecretPrefix, ConfigMapPrefix:
		if !scoped {
			return SecretRef{}, false
		}
	default:
		return SecretRef{}, false
	}
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return SecretRef{}, false
	}
	return SecretRef{Namespace: ns, Name: name, ConfigMap: scheme+"://" == ConfigMapPrefix}, true
}

// allowCredentials records the certificates a server references that the
// proxy may read: only with a verified identity in the Gateway's namespace
// (with its service account when the Gateway names one), and only
// Secrets of that namespace. Cross-namespace references (ReferenceGrant)
// are not granted here.
func allowCredentials(out map[string]bool, s *networking.Server, cfg *config.Config, proxy *model.Proxy) {
	id := proxy.VerifiedIdentity
	if id == nil || s.GetTls() == nil {
		return
	}
	wantNS := cfg.Namespace
	if p := cfg.Annotations[ParentNamespaceAnnotation]; p != "" {
		wantNS = p
	}
	if id.Namespace != wantNS || cfg.Namespace != id.Namespace {
		return
	}
	if sa := cfg.Annotations[ServiceAccountAnnotation]; sa != "" && sa != id.ServiceAccount {
		return
	}
	names := s.Tls.GetCredentialNames()
	if len(names) == 0 && s.Tls.GetCredentialName() != "" {
		names = []string{s.Tls.GetCredentialName()}
	}
	mutual := s.Tls.GetMode() == networking.ServerTLSSettings_MUTUAL
	for _, cn := range names {
		if strings.HasPrefix(cn, BuiltinPrefix) {
			continue
		}
		rn := ResourceName(cn)
		if ref, ok := ParseResourceName(rn, id.Namespace); ok && ref.Namespace == id.Namespace {
			out[rn] = true
			if mutual {
				out[rn+CACertSuffix] = true
			}
		}
	}
	if ca := s.Tls.GetCaCertCredentialName(); ca != "" && strings.HasPrefix(ca, GatewaySecretPrefix) {
		if ref, ok := ParseResourceName(ca, id.Namespace); ok && ref.Namespace == id.Namespace {
			out[ca] = true
		}
	}
}
