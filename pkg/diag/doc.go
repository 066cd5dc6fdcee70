// Package diag keeps the control plane's current configuration problems —
// dropped unknown fields, validation warnings, rejected documents, mesh config
// that fails to parse — so /debug/warningz can list them until they are fixed.
//
// A reporter owns a subject (e.g. one file, or the mesh config) and replaces
// the subject's problems wholesale each time it re-reads it; an empty report
// means fixed.
package diag
