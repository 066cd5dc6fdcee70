// Package security owns the vocabulary shared by the certificate authority,
// the CA gRPC service and the xDS server: who a caller is (Caller, with the
// SPIFFE identities it proved), how a caller is recognised (Authenticator),
// running a list of authenticators in order (Authenticate), and SPIFFE
// identity strings (SpiffeID, ParseSpiffeID).
//
// The implementations live below: pkg/security/ca signs certificates,
// pkg/security/authenticate holds the client-certificate and Kubernetes JWT
// authenticators, pkg/security/server serves istio.v1.auth.IstioCertificateService.
package security
