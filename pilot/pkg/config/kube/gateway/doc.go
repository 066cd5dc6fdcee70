// Package gateway translates Gateway API objects (GatewayClass, Gateway,
// HTTPRoute, GRPCRoute, TCPRoute, TLSRoute, ReferenceGrant) into the
// synthetic Istio Gateways and VirtualServices Istio derives from them, named
// and annotated as Istio names them, and computes the status each input
// object should carry.
//
// The translation is pure: every function reads its inputs through a Context
// (what exists in the cluster: classes, namespaces, Services and
// ServiceEntries with their endpoints, Secrets, ConfigMaps, ReferenceGrants,
// the listeners of other Gateways) and returns values; no I/O, no clock. New
// or changed conditions carry a zero lastTransitionTime, which the status
// writer stamps when it writes.
//
// In ambient mode (Options.Ambient) the istio-waypoint class of
// istio.io/mesh-controller is Istio's too: a waypoint Gateway gets its
// status (its listeners must be HBONE on 15008, its Service is the
// Gateway's name, its addresses both the IP and the hostname) and yields no
// synthetic Gateway or VirtualService.
//
// Two drivers run it: Translate computes everything at once from a Snapshot
// (tests, benchmarks), and Source keeps the results as krt collections over
// a config store, recomputing only what an event touches; it is a read-only
// aggregate.CollectionStore of the synthetic Gateway and VirtualService
// kinds. Writing status back and creating the default GatewayClasses is the
// job of the statuswriter subpackage, run by the leader only.
package gateway
