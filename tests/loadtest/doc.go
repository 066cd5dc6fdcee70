// Command loadtest connects N simulated sidecars to a real control plane
// over delta ADS and measures time to full config and, after a
// VirtualService edit (repeated -repeat times), time until every sidecar
// has the new routes, with the control plane's CPU and memory.
//
//	go run ./tests/loadtest -n 1000 -services 100
//	go run ./tests/loadtest -kube -istiod self,peer -n 100 -services 500 -namespaces 10 -repeat 5
//
// Run it from the repository (it builds ./cmd/istiod, and -kube reads
// manifests/crds/). It exits non-zero when a sidecar failed, a response
// broke a wire rule, or a phase did not complete.
//
// # The mesh
//
// S services spread over the namespaces ns-0…: per service a ServiceEntry
// (a VIP, one HTTP port 9080, STATIC resolution, a workloadSelector), a
// DestinationRule (subsets v1 and v2 and a traffic policy) and a
// VirtualService (a header match to v2, then a weighted v1/v2 split), and
// one WorkloadEntry per simulated sidecar, which is the sidecar's own
// address (sidecar i belongs to service i mod S). The change moves the
// weights of service 0's VirtualService; round r gives v2 the weight 10+r,
// a value no other round had, so that a sidecar reports the round whose
// routes it got and late pushes of an earlier round are not counted.
//
// ServiceEntries and WorkloadEntries rather than Services, EndpointSlices
// and Pods: they are the same objects in both modes, both control planes
// join a sidecar to its service through the WorkloadEntry of its address,
// and without a kube-controller-manager and kubelets Pods would need their
// status written by hand for EndpointSlices to count. The figures therefore
// exercise the ServiceEntry registry, not the Kubernetes one.
//
// # Modes
//
// Files (the default): the mesh is written to a directory that istiod
// watches (--configDir). Only this repository's istiod reads it.
//
// Kubernetes (-kube): a real etcd and kube-apiserver on loopback
// (tests/kube, the binaries of `make testbin`) with the CRDs of
// manifests/crds/; the mesh is created through the API, the change is a
// merge patch of the VirtualService's spec, and each control plane gets a
// kubeconfig (client certificate, admin) and runs in namespace
// istio-system.
//
// -istiod names the control planes, comma-separated, measured one after the
// other on the same mesh (the same directory or the same API server, the
// VirtualService set back to its initial weights before each): "self"
// builds ./cmd/istiod (the default), "peer" is Istio's own pilot-discovery
// (the release-1.31 commit of hack/istiobin.sh, built into the same cache
// as pilot-agent by `make peerbin`), any other entry is a path whose flavor
// is read from the binary's Go build information (main package
// github.com/meshplane/istiod/cmd/istiod or
// istio.io/istio/pilot/cmd/pilot-discovery), or flavor=path with flavor
// meshplane or istio. With more than one, a side-by-side table follows
// the reports.
//
// # Command lines
//
// Both get `discovery --meshConfig <file> --httpAddr --monitoringAddr
// --grpcAddr --secureGRPCAddr` on free loopback ports, --httpsAddr
// 127.0.0.1:0, a working directory of their own (where each keeps its CA
// and certificates under its relative default paths), POD_NAMESPACE,
// POD_NAME, and PILOT_MAX_REQUESTS_PER_SECOND=100000: the default new-stream
// rate limit (25 a second) would only measure the limit. Ours gets
// --configDir and --fileResync 1h, or --kubeconfig and --namespace.
// Istio's pilot-discovery gets --kubeconfig, --namespace, --networksConfig
// of a missing file (no networks) and --ctrlz_port 0 (ControlZ would take
// the fixed port 9876); otherwise it runs with its defaults, as users run
// it: its CA on (a self-signed root in Secret istio-ca-secret, its serving
// certificate under ./var/run/secrets/istio-dns), the sidecar injector
// skipped (no template ConfigMap), webhook configurations patched only
// when they exist, XDS_AUTH on but not applied to plaintext connections,
// which the sidecars use. It runs without a cluster network: every address
// is on loopback and nothing it needs (DNS, cloud metadata, a pod) exists.
//
// # What is measured
//
// Per control plane: time to /ready; after -settle of idling, the CPU
// seconds of startup, RSS (VmRSS) and the live heap (HeapAlloc after a
// forced GC, from the text form of /debug/pprof/heap on the HTTP port,
// which both serve to loopback callers) with no sidecar; the time from the
// first dial to the last sidecar's full config (CDS, EDS, LDS, RDS, with
// the target route); per change round the time from the edit to the last
// sidecar's new route (the report's total is the median of the rounds);
// the CPU seconds of each phase; and at the end, with every sidecar still
// connected and after -settle of idling again (the steady state), RSS,
// peak RSS (VmHWM) and the live heap again, and the RSS and heap each
// sidecar adds over the no-sidecar baseline. Each control plane's own view
// of the change rounds comes from the histograms both export on their
// monitoring port: pilot_debounce_time, pilot_pushcontext_init_seconds,
// pilot_proxy_queue_time, pilot_xds_push_time and
// pilot_proxy_convergence_time (their means over the rounds).
//
// With -churn N (and -kube), a pod churn follows the change rounds: N pods
// behind -churn-services Services, their endpoints in EndpointSlices the
// tool writes, replaced as a rolling restart replaces pods (the successor
// added ready and the pod marked terminating in one update, the pod
// removed in the next; the Services in parallel, -churn-interval between
// one Service's updates); then the time from the last update until every
// sidecar holds every Service's final endpoints, the CDS, LDS and RDS
// resources the sidecars received meanwhile (an endpoint-only change needs
// none), and the load assignments of a churned Service that arrived empty
// although it always had ready endpoints (see churn.go).
//
//	go run ./tests/loadtest -kube -istiod self,peer -n 1000 -services 1000 -namespaces 20 -churn 100
//
// With -storm D, a config storm follows the change rounds: the target
// VirtualService edited -storm-rate times a second (10 by default) for D,
// every sidecar connected, then the time from the last edit until every
// sidecar has that edit's routes (the target: 2 s at 10 edits a
// second for 60 s), istiod's CPU seconds over the storm and its RSS peak,
// sampled every 100 ms. Only the last edit carries weights no earlier edit
// had, so a sidecar reports the final routes only.
//
//	go run ./tests/loadtest -kube -istiod self,peer -n 1000 -services 1000 -namespaces 20 -storm 60s
//
// By default every sidecar dials at once (-dial-concurrency only bounds the
// connections being opened): the worst case of a control plane restart.
// -max-syncing N is a ramp instead: at most N sidecars between their first
// dial and full config, the next dialing when one is done; the total time
// to full config then includes the queueing, the per-sidecar times do not.
// The tool runs on the same machine as the control plane and the API
// server, and its CPU seconds are reported beside theirs: on a small
// machine it competes with what it measures.
//
// Validating sidecars (-validate, spread over the fleet) decode every
// resource they receive in full and run ValidateAll on it, but only once a
// phase's figures are taken (after full config, after each change round):
// on a small machine the tool shares the cores with the control plane, and
// decoding tens of megabytes of routes during the round would time the
// tool as much as the control plane. Their CPU seconds are reported apart.
// For the same reason every sidecar decodes its responses with the
// resources' values referencing the received bytes (codec.go), and walks
// the wire structure of what it does not act on rather than decoding it.
//
// Each sidecar's HTTP/2 flow-control window is fixed (-window, 1 MiB by
// default, per stream and per connection): with gRPC's default the window
// follows an estimate of the bandwidth, which on loopback grows until a
// thousand sidecars buffer several gigabytes between them. Fixed, what a
// control plane can have sent ahead of a sidecar's reading is bounded, and
// the bound is the same for every control plane.
//
// Every sidecar checks the wire rules on every delta response (type URL,
// system version, unique nonces, named resources of the response's type,
// nothing both sent and removed, names matching the content); a version on
// each resource is required of this repository's istiod only, because the
// protocol makes it optional and Istio's pilot-discovery leaves it empty on
// some types.
package main
