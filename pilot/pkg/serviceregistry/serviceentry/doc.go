// Package serviceentry is the ServiceEntry service registry: it turns
// ServiceEntries, WorkloadEntries, WorkloadGroups (and, with a cluster, the
// pods a ServiceEntry selects) into model.Service values and endpoint shards,
// and reports changes to a model.XDSUpdater. It reads any config store that
// holds those kinds — the directory source alone, the CRD client, or the
// aggregate of both.
//
// # Mapping
//
//   - Each host of a ServiceEntry is one Service: its ports (protocol from
//     the port's protocol field), its addresses (IPs; CIDRs, a /32 read as
//     the IP) as cluster VIPs with the first as default address, location
//     (MESH_EXTERNAL → MeshExternal), resolution (NONE → Passthrough,
//     STATIC → ClientSideLB, DNS → DNSLB, DNS_ROUND_ROBIN →
//     DNSRoundRobinLB, DYNAMIC_DNS → DynamicDNS), exportTo, subjectAltNames
//     as service accounts. Hosts without addresses use the addresses
//     allocated in the object's status, when there are some.
//   - Endpoints: the inline endpoints; the WorkloadEntries (and pods) of the
//     namespace that the workloadSelector selects; for a DNS ServiceEntry
//     with neither, one endpoint per port whose address is the host itself.
//     A workload's port for a service port is its port of the same name,
//     else the service port's targetPort, else the service port number.
//   - A WorkloadEntry's labels are its spec labels overlaid with its metadata
//     labels; address, ports, weight, locality, network and service account
//     come from its spec. One created from a WorkloadGroup (annotation
//     istio.io/autoRegistrationGroup or a controller owner reference) takes
//     what it leaves unset from the group's template and metadata.
//   - A WorkloadEntry whose address is a DNS name serves DNS ServiceEntries
//     only. One whose address is neither an IP, a DNS name nor a unix socket
//     is reported on /debug/warningz and serves nothing.
//
// # Other registries
//
// WorkloadEntryInstances are the valid, healthy, IP-addressed entries, for
// Kubernetes Services to select. AddExternalWorkloads attaches another
// cluster's entries (a remote cluster's WorkloadEntry-only registry: this
// registry on a store holding WorkloadEntries alone) for the
// ServiceEntries to select.
//
// # Events
//
// One derived collection computes, per ServiceEntry, its services and their
// endpoints (recomputed when a selected workload changes). Its handler sends
// a SvcUpdate and a full ConfigUpdate (ServiceEntry keys) for each service
// added, changed or removed, and one EDSUpdate per host whose endpoints
// changed, holding the union over every ServiceEntry of that host in that
// namespace (found through an index, so no other host is touched).
package serviceentry
