// Package kubemesh feeds mesh configuration from a Kubernetes ConfigMap into
// mesh.Sources: one informer restricted to the ConfigMap's name (field
// selector) in one namespace, started at once because the mesh config is
// needed before anything else starts.
package kubemesh
