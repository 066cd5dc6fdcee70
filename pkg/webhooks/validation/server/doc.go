// Package server is istiod's configuration validation admission webhook
// (/validate on --httpsAddr, Istio's validation.istio.io and
// rev.validation.istio.io): it decodes a Kubernetes AdmissionReview (v1, or
// v1beta1 which has the same shape), validates the object of a CREATE or
// UPDATE with a Validator supplied by the caller (the same validation as
// `istiod validate`), and answers allowed, or denied with the field path and
// reason, echoing the request's uid. Istio's galley_validation_* metrics are
// counted on the process registry.
package server
