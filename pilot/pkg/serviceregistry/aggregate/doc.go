// Package aggregate joins the service registries into the one view the rest
// of the control plane reads: Kubernetes registries first, then the others
// (ServiceEntry), each keeping its own services and endpoint shards.
//
// Hostname clashes are resolved as Istio does: every registry's services are
// listed; a lookup by hostname answers from the first registry that has it;
// a lookup by hostname and namespace prefers the Kubernetes Service over a
// ServiceEntry, then the oldest. A ServiceEntry host that is also a
// Kubernetes Service's is listed on /debug/warningz (Conflicts).
package aggregate
