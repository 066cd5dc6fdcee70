// Package ambient is the ambient index: from Pods, Services, Namespaces,
// Nodes, EndpointSlices, ServiceEntries, WorkloadEntries, Gateways and the
// security policies it builds the workload API resources Istio's istiod
// sends ztunnel (istio.workload.Address, istio.security.Authorization),
// as krt collections the xDS generators serve.
//
// # Flow
//
// Every stage is a krt transform of one object and what it fetched (see
// pkg/kube/krt for the rules):
//
//   - waypoints: Gateway (with status addresses, its pods' service
//     accounts, its class) → waypoint;
//   - network gateways: Gateway (class istio-remote, network label, status
//     addresses) → networkGateway, one per address;
//   - policies: AuthorizationPolicy → workloadPolicy (the L4 policy ztunnel
//     enforces, its selector; nil Authorization for policies ztunnel
//     refuses);
//   - services: Service, ServiceEntry host → typedService; then one
//     serviceInfo per namespace/hostname (a Service wins over ServiceEntries,
//     else the oldest; one is canonical);
//   - workloads, one collection per source: Pod, WorkloadEntry, ServiceEntry
//     endpoint (or host, for DNS entries without endpoints), EndpointSlice
//     endpoint naming no pod, network gateway → Address;
//   - authorizations: workloadPolicy, port-level PeerAuthentication, and the
//     static STRICT policy (present while any PeerAuthentication exists)
//     → Authorization.
//
// Addresses joins the workloads with the services; Authorizations joins the
// three policy sources.
//
// PolicyStatuses (policy_status.go) is the status Istio writes on every
// AuthorizationPolicy: ZtunnelAccepted for a policy ztunnel enforces or
// refuses, WaypointAccepted for one bound by targetRefs (a waypoint
// Gateway, a Service or ServiceEntry using one, the waypoint GatewayClass
// from the root namespace); the caller writes it (the status writer of
// pilot/pkg/config/kube/gateway/statuswriter, run by a leader).
//
// # Istio's behaviour kept on purpose
//
//   - Enrolment (istio.io/dataplane-mode) is not read: every pod with an IP
//     is a workload, HBONE comes only from istio-cni's
//     ambient.istio.io/redirection annotation (or the
//     networking.istio.io/tunnel label), and policies apply either way.
//   - A workload without labels lists every selector policy of its
//     namespace and the root namespace (Istio's krt skips an empty label
//     filter); the reference shows it on a DNS ServiceEntry's workload.
//   - A pod keeps a service while that service's EndpointSlice names it,
//     even when the selector no longer matches.
//   - The cluster's network is the system namespace's
//     topology.istio.io/network label (Options.Network when it has none).
//   - Network gateways (networks.go) are the status addresses of the
//     cluster's istio-remote Gateways labelled with a network, each a
//     workload of its own and the network_gateway of the pods,
//     WorkloadEntries and ServiceEntry endpoints of its network, as with
//     Istio's AMBIENT_ENABLE_MULTI_NETWORK off (its default).
//
// # Not built (yet)
//
// Ambient multi-network (AMBIENT_ENABLE_MULTI_NETWORK: remote clusters,
// their istio-east-west gateways, split-horizon workloads), canary waypoints
// (weighted_waypoints), ServiceEntry visibility from the mesh config (all
// PUBLIC), PILOT_AUTO_ALLOW_WAYPOINT_POLICY (off in Istio too), dry-run
// policies (off in Istio by default), and the WaypointBound status of
// Services and workloads. Inputs are expected filtered by
// discoverySelectors and revision by the caller.
package ambient
