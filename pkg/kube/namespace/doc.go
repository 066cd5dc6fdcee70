// Package namespace decides which namespaces the control plane watches, from
// the mesh config's discoverySelectors and the namespaces' labels.
package namespace
