// Package analysis finds, across objects, configuration that Istio 1.31
// accepts but that does not do what it says: the checks `istioctl analyze`
// runs on Sidecar and Telemetry resources (with its IST codes, so users can
// search them) and some it lacks (our MP codes), among them the EnvoyFilter
// pairs whose order Istio's documentation misstates (MP0004). It is pure:
// objects and the mesh config in, messages out. The EnvoyFilter checks of
// istioctl analyze (IST0133, IST0151 to IST0155) live with the EnvoyFilter
// patcher (pilot/pkg/networking/envoyfilter).
package analysis
