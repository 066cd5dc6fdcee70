// Package ca is istiod's certificate authority: it owns the signing
// material (a self-signed root kept in Secret istio-system/istio-ca-secret,
// a directory or memory, or a plugged-in CA from ROOT_CA_DIR), signs
// workload certificates from CSRs for identities proven by an
// authenticator, signs istiod's own serving certificate, and rotates the
// self-signed root before it expires.
//
// Certificates are shaped like Istio's: a root with subject O=<trust
// domain>, CA:TRUE and key usage Certificate Sign; leaves with no subject,
// critical SANs, key usage Digital Signature and Key Encipherment, EKU
// server and client auth, valid from 2 minutes before issuance.
//
// Consistency: the signing material is swapped atomically; a Sign sees
// either the old or the new root, never a mix. Every returned byte slice is
// a copy owned by the caller.
package ca
