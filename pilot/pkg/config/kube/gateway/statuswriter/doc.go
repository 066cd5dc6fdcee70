// Package statuswriter writes back the status the Gateway API translation
// computes for each Gateway API object, and creates Istio's builtin
// GatewayClasses when they are missing, once the API server serves
// GatewayClasses (until their CRD is installed it tries, and warns about,
// nothing). It is run by the leader of Istio's gateway status Lease only,
// one leadership term at a time, so every object has one writer; a status
// equal to the object's is never written again. It stamps the
// lastTransitionTime of new conditions with its clock.
package statuswriter
