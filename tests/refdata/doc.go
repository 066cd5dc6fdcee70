// Package refdata locates the shared reference data: what Istio 1.31's istiod
// served for known inputs, kept in ../shared/reference beside the repository
// root. Tests comparing against it fail when it is missing, so a green run
// includes those comparisons; ISTIOD_SKIP_REFERENCE=1 turns the failure into
// a skip on machines without the data.
//
// It imports only the standard library, so tests anywhere (pkg/ included)
// may use it.
package refdata
