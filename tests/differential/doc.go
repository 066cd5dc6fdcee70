// Package differential proves parity with Istio by running the same inputs
// through Istio's own pilot-discovery and through this repository's istiod,
// and comparing, resource by resource, what each sends one proxy.
//
// # The fixture
//
// Shared(t) starts, once per test binary, two worlds: two real etcd +
// kube-apiserver pairs (tests/kube, every CRD of manifests/crds installed,
// namespace istio-system and the injector ConfigMap of Istio's chart in
// each), this checkout's cmd/istiod (built into a temporary directory)
// reading one and Istio's pilot-discovery (`make peerbin`, see
// tests/istiobin) the other, both with the same mesh config (MeshConfig),
// on free loopback ports, with the command lines tests/loadtest uses.
// Main, called from the package's TestMain, stops all four processes after
// the last test:
//
//	func TestMain(m *testing.M) { differential.Main(m) }
//
// With ISTIOD_SKIP_REFERENCE=1 the tests skip; otherwise a missing
// pilot-discovery fails them, naming `make peerbin`.
//
// # A case
//
// Fixture.Run(t, Case) applies the case's objects to both API servers,
// connects its proxy to both control planes over state-of-the-world ADS
// (pilot/pkg/xds/adsc: CDS, then EDS for the EDS clusters, LDS, then RDS
// for the route configurations the listeners name), and compares every
// resource as protojson. The case passes when both agree twice in a row,
// outside the allowed differences; it fails with every other difference,
// one line per resource field, ours and Istio's values side by side:
//
//	rds http.8080: virtualHosts[0].routes[0].typedPerFilterConfig.envoy.filters.http.cors.filterEnabled
//	    ours:  (absent)
//	    Istio: {"defaultValue":{"numerator":100}}
//
// Adding a case is writing one:
//
//	func TestMyCase(t *testing.T) {
//		differential.Shared(t).Run(t, differential.Case{
//			Name:    "my case",
//			Objects: `...YAML: Namespace, Services, Pods with status.podIP, Istio config...`,
//			Proxy:   differential.Proxy{Pod: "web-5d8f7-abcde", Namespace: "my-case"},
//			Allowed: []differential.Allowed{{Name: "...", Type: "cds", Resource: "...", Path: "...", Why: "..."}},
//		})
//	}
//
// Objects are created as given, with what a cluster's controllers would add:
// Pods get their declared status written (a kubelet's), Ready unless they
// say otherwise, and serviceAccountName "default" when they name none;
// each selecting Service gets an EndpointSlice of the selected Pods unless
// the objects hold one (NoAutoEndpoints turns that off); cluster IPs are
// left to each API server. The proxy presents itself as Istio's agent
// would for its pod (Proxy: node ID, NAMESPACE, LABELS, ISTIO_VERSION,
// CLUSTER_ID, INSTANCE_IPS, SERVICE_ACCOUNT, WORKLOAD_NAME...). Give each
// case namespaces of its own: when it ends, what it created is deleted and
// its namespaces are swept of what the control planes generated for it.
// The cases run one at a time, in one pair of worlds.
//
// # Multicluster cases
//
// Fixture.Multicluster gives each world a second cluster: a remote API
// server (started on the first such case, stopped with the fixture),
// read by the world's control plane through a remote secret in the
// primary's istio-system (cluster2, a kubeconfig with its credentials
// inline). It applies the remote's objects (their Services declare
// cluster IPs of RemoteClusterIPs, so that both worlds hold the same),
// labels each cluster's istio-system with its network when asked, and
// waits until both control planes send a remote sentinel (a Service of
// the remote); Clusters.Run then runs cases as Run does, their objects
// in the primaries, and Clusters.RotateSecret and DeleteSecret change the
// secret between them. When it ends, the secret is deleted, both control
// planes are seen to drop the remote, and the labels and the remote's
// objects are removed.
//
// # What is normalised, what is allowed
//
// Two things must differ between the worlds and are rewritten before the
// comparison (normalise): cluster IPs, named "<clusterIP ns/name>" after
// their Service, and the port of the API server's own endpoint (the
// remote's too). Neither
// control plane identifier, versions, nonces nor certificates are compared:
// they are not part of the resources (SDS is not fetched). Anything else
// that differs is a failure unless the case allows it by name, with a
// pattern for the type, the resource and the field path, and the reason;
// an allowed difference that no longer occurs fails the case, so the list
// stays true.
//
// # Completeness
//
// After its objects the harness creates a sentinel, a ServiceEntry of the
// case's own host in the proxy's namespace (a DNS cluster and a listener on
// port 15999 in both snapshots): a snapshot holding it was built after the
// control plane read the case's objects. Until both hold it and agree, the
// harness polls, with a fresh stream each time; a disagreement is reported
// once both snapshots stayed unchanged for a few seconds, or at the case's
// timeout. DIFFERENTIAL_DUMP=<dir> writes the last snapshots of each case
// there, one JSON file per type and control plane.
package differential
