// Package server serves istio.v1.auth.IstioCertificateService
// (CreateCertificate) for a certificate authority: it authenticates the
// caller with the configured authenticators (first success wins), signs the
// CSR for the caller's identities with the requested TTL, and reports
// Istio's citadel_server_* metrics. Register it on the TLS gRPC server
// only; on a plaintext connection every call is refused.
package server
