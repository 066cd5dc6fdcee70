// Package istiobin hands tests Istio's own pilot-agent and istioctl (Istio
// 1.31 line) to run as real clients of this istiod, and the recipe for running
// the agent as Istio's grpc-agent injection template does (proxyless gRPC, no
// Envoy), on loopback, in a temporary working directory.
//
// The binaries are built once per machine by hack/istiobin.sh (`make testbin`,
// which `make test` and .ci/run depend on) from the Go module proxy into
//
//	${XDG_CACHE_HOME:-$HOME/.cache}/istiod-testbin/istio-<Version>/{pilot-agent,istioctl}
//
// in a temporary module, so nothing of istio.io/istio enters this module's
// graph. PilotAgent and Istioctl return their paths and fail the test, naming
// `make testbin`, when they are missing; they never build (the first build
// takes minutes, longer than a test should wait). They are built without
// Istio's version ldflags, so they report version "unknown", like the locally
// built agent recorded in ../shared/reference/security; their embedded build
// information names istio.io/istio@Version and istio.io/api v1.31.x.
//
// Istio's pilot-discovery, the control plane tests/loadtest measures side by
// side with this istiod, is built into the same directory on demand only
// (`make peerbin`, hack/istiobin.sh --peer); PilotDiscovery returns its path.
//
// # The agent, proxyless
//
// PrepareAgentDir writes the files the agent reads, at the paths it reads
// them relative to its working directory (Istio's defaults are "./var/...",
// "./etc/..."):
//
//	var/run/secrets/tokens/istio-token   service account token, audience istio-ca (JWT_POLICY third-party-jwt)
//	var/run/secrets/istio/root-cert.pem  the istio-ca-root-cert ConfigMap's root-cert.pem (PILOT_CERT_PROVIDER=istiod)
//	etc/istio/pod/annotations            downward API: status.sidecar.istio.io/port="0" (no status server on
//	                                     :15020, which would listen on all interfaces) and
//	                                     traffic.sidecar.istio.io/excludeInterfaces=<every non-loopback interface>
//	                                     (INSTANCE_IPS is then INSTANCE_IP alone)
//	etc/istio/pod/labels                 downward API: the pod's labels
//	var/lib/istio/data/                  OUTPUT_CERTS (an emptyDir in a pod; the agent does not create it)
//	etc/istio/proxy/                     where it writes grpc-bootstrap.json and the socket XDS
//
// AgentEnv gives its whole environment (nothing is inherited), AgentArgs its
// arguments (`proxy sidecar --domain <ns>.svc.cluster.local ...`), and
// AgentCommand puts them together into an unstarted exec.Cmd with the
// prepared directory as working directory and HOME. Against istiod's TLS
// xDS+CA port 127.0.0.1:<port> (--secureGRPCAddr):
//
//   - PROXY_CONFIG={"discoveryAddress":"127.0.0.1:<port>"} is the only place
//     the address is given. CA_ADDR stays unset, so the agent uses the
//     discovery address as CA too and verifies both with ISTIOD_SAN.
//   - ISTIOD_SAN=istiod.istio-system.svc: istiod's serving certificate has DNS
//     SANs only, no IP SAN. With CA_ADDR set explicitly ISTIOD_SAN is not
//     applied to the CA connection (options.SetupSecurityOptions), and the CA
//     handshake to 127.0.0.1 fails.
//   - DISABLE_ENVOY=true, ISTIO_META_GENERATOR=grpc, ISTIO_META_DNS_CAPTURE=false:
//     no Envoy, no SDS socket, no DNS proxy; the agent only writes the
//     certificates to OUTPUT_CERTS and the gRPC bootstrap, and proxies xDS
//     from etc/istio/proxy/XDS (one upstream stream per client stream).
//   - CLOUD_PLATFORM=none skips the cloud metadata probes (up to 5 s).
//
// The agent then listens on nothing but its unix socket. A gRPC client reads
// etc/istio/proxy/grpc-bootstrap.json, whose server_uri is
// "unix:///etc/istio/proxy/XDS" (the relative path written as if absolute):
// outside that root it must dial XDSSocket(dir) instead.
//
// The token must be a real one: istiod makes a TokenReview with audience
// istio-ca. ServiceAccountToken creates the service account when missing (no
// controller-manager runs in tests/kube) and requests one with the
// TokenRequest API.
//
// # istioctl proxy-status
//
// `istioctl proxy-status --xds-address 127.0.0.1:<port>` (ProxyStatusCommand)
// authenticates with a token of service account "default" in the istio
// namespace (-i, default istio-system), audience istio-ca, that it creates
// itself through the TokenRequest API with the kubeconfig given by
// --kubeconfig/-c (or KUBECONFIG, or ~/.kube/config); the account must exist.
// It always skips TLS verification when it sends that token (no --insecure
// needed), and sends one istio.io/debug/syncz request with node metadata
// GENERATOR=event, NAMESPACE=istio-system, SERVICE_ACCOUNT=default.
// --plaintext or --cert-dir would send no token.
package istiobin
