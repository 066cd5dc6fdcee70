// Package authenticate holds the authenticators of istiod's secure gRPC
// port (CA and xDS): ClientCertAuthenticator, which trusts the URI SANs of a
// TLS client certificate already verified against the mesh roots, and
// KubeJWTAuthenticator, which checks a Kubernetes service account token
// with a TokenReview. Both implement security.Authenticator, read only what
// the gRPC context carries, and return Istio's error messages.
package authenticate
