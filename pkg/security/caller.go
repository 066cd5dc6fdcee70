package security

import "fmt"

// AuthSource says how a caller proved its identity.
type AuthSource int

const (
	// AuthSourceClientCertificate: a TLS client certificate verified against
	// the mesh roots.
	AuthSourceClientCertificate AuthSource = iota
	// AuthSourceKubeJWT: a Kubernetes service account token checked with a
	// TokenReview (Istio calls this AuthSourceIDToken).
	AuthSourceKubeJWT
)

// String names the source.
func (s AuthSource) String() string {
	switch s {
	case AuthSourceClientCertificate:
		return "ClientCertificate"
	case AuthSourceKubeJWT:
		return "KubeJWT"
	}
	return fmt.Sprintf("AuthSource(%d)", int(s))
}

// Caller is an authenticated peer. Authenticators return a new Caller per
// call; the receiver owns it and may keep it.
type Caller struct {
	AuthSource AuthSource
	// Identities are SPIFFE URIs (spiffe://<trust domain>/ns/<ns>/sa/<sa>),
	// at least one when authentication succeeded.
	Identities []string
	// KubernetesInfo is set for AuthSourceKubeJWT: what the TokenReview said
	// about the service account (and the pod, when the token is bound to one).
	KubernetesInfo KubernetesInfo
}

// KubernetesInfo is what a Kubernetes token says about its holder.
type KubernetesInfo struct {
	PodName           string
	PodNamespace      string
	PodUID            string
	PodServiceAccount string
}

// String formats the info as Istio does.
func (k KubernetesInfo) String() string {
	return fmt.Sprintf("Pod{Name: %s, Namespace: %s, UID: %s, ServiceAccount: %s}",
		k.PodName, k.PodNamespace, k.PodUID, k.PodServiceAccount)
}
