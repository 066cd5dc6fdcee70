// Package statuswriter writes back the status the Gateway API translation
// computes for each Gateway API object, and any other status collection of
// the same shape (the ambient index's AuthorizationPolicy conditions, an
// *IstioStatus compared as a proto), and creates Istio's builtin
// GatewayClasses (istio-waypoint too in ambient mode) when they are
// missing, once the API server serves GatewayClasses (until their CRD is
// installed it tries, and warns about, nothing). It is run by the leader
// of a Lease only, one leadership term at a time, so every object has one
// writer; a status equal to the object's is never written again. It stamps
// the lastTransitionTime of new conditions with its clock.
package statuswriter
