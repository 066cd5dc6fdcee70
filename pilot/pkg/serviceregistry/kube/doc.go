// Package kube is the Kubernetes service registry: it turns the Services,
// EndpointSlices, Pods, Nodes and Namespaces of one cluster into
// model.Service values and endpoint shards, and reports every change to a
// model.XDSUpdater.
//
// # Flow
//
// Informer-backed krt collections feed four derived collections, each a pure
// transform of one object and what it fetched:
//
//   - services: Service → serviceInfo (the model.Service, target ports,
//     problems);
//   - workloads: Pod (+ its Node for locality, the system namespace and
//     meshNetworks for network) → model.WorkloadInstance, the endpoint
//     template of the pod;
//   - podIPs: workload → one entry per namespace/IP, to find the pod behind
//     an endpoint without a targetRef;
//   - slices: EndpointSlice (+ its Service and the workloads it names) →
//     sliceInfo, the endpoints of that slice;
//   - gateways: service → the network gateways it is (network.go).
//
// Handlers turn their events into XDSUpdater calls: a service added, changed
// or deleted is a SvcUpdate plus a full ConfigUpdate keyed
// ServiceEntry/<namespace>/<hostname>; a slice change recomputes the
// endpoints of its one service (the union of that service's slices, found
// through an index) and sends one EDSUpdate — no other service is touched.
// Headless services also get a full push, since proxies build listeners per
// endpoint address. A workload change is a ProxyUpdate for its IPs. A
// change of the cluster's network gateways is a forced push.
//
// Services also select WorkloadEntries (workloadentries.go): another
// registry's entries, attached with SelectWorkloadEntries, join the
// endpoints of the ClientSideLB Services of their namespace whose selector
// their endpoint labels hold, after the slices' endpoints, ports mapped
// through the entry's ports as Istio maps them. A change of an entry, or
// of such a Service, recomputes the endpoints of the services it touches;
// every endpoint push is serialised and reads the current state. A proxy
// whose first IP is an entry's is served the Services selecting it.
//
// # Rules
//
//   - Endpoints come from EndpointSlices only (Endpoints objects are not
//     read); FQDN slices and slices of MCS (multicluster.kubernetes.io)
//     services are ignored, as Istio does.
//   - Readiness comes from the slice conditions: ready (or unset) is
//     Healthy, terminating is Terminating, anything else UnHealthy; all are
//     kept and sent.
//   - An address whose targetRef names a pod not seen yet is left out until
//     the pod arrives. A slice whose Service does not exist yields no
//     endpoints; unless the slice is owned by a Service (it is then waiting
//     for garbage collection) that is reported on /debug/warningz.
//   - Malformed Service ports (number out of range, duplicate number) are
//     dropped and reported; the rest of the Service is served.
//   - Objects of namespaces the discovery selectors exclude are ignored.
//   - An endpoint's network is its pod's topology.istio.io/network label,
//     else that label on the system namespace (Options.SystemNamespace) of
//     this cluster, else meshNetworks (fromRegistry naming the cluster, else
//     fromCidr holding the IP), else none (network.go).
package kube
