// Package analysis finds, across objects, configuration that Istio 1.31
// accepts but that does not do what it says: the checks `istioctl analyze`
// runs on Sidecar and Telemetry resources (with its IST codes, so users can
// search them) and some it lacks. It is pure: objects and the mesh config
// in, messages out. EnvoyFilter checks live with the EnvoyFilter patcher.
package analysis
