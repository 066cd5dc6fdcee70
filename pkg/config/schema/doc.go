// Package schema is the kind registry: metadata.yaml lists every kind once and
// codegen turns it into the gvk, gvr, kind and collections packages and the
// CRD client's translation map.
package schema
