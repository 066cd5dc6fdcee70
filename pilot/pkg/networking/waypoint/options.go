package waypoint

import (
	"net/netip"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/config"
)

// Service is one service that uses the waypoint, with what applies to it.
type Service struct {
	Service *model.Service
	// VIPs are the addresses its chains match (the proxy's cluster's
	// VIPs, else the allocated ones).
	VIPs []string
	// DestinationRule is the rule the waypoint uses for the service (nil:
	// none): its subsets get clusters of their own, its traffic policy
	// shapes them.
	DestinationRule *config.Config
	// Endpoints are the service's endpoints, for DNS services (whose
	// clusters hold them inline); nil for the others.
	Endpoints []*model.IstioEndpoint
	// EndpointView is what the waypoint sees of Endpoints: its network,
	// the network gateways, its network view (the zero value: every
	// endpoint as it is).
	EndpointView cluster.EndpointView
	// VirtualServices are the VirtualServices of the service's host in the
	// waypoint's or the service's namespace, in the push context's order
	// (oldest first); their HTTP routes are merged.
	VirtualServices []*config.Config
	// HTTPPolicy are the authorization filters of its HTTP chains (RBAC
	// for the policies that target the service), TCPPolicy those of its
	// TCP chains.
	HTTPPolicy []*hcm.HttpFilter
	TCPPolicy  []*listenerv3.Filter
}

// Options are the waypoint-wide inputs.
type Options struct {
	// Mesh gives the trust domain (and aliases), the connect timeout and
	// the HBONE idle timeout. Read only; nil means Istio's defaults.
	Mesh *meshconfig.MeshConfig
	// Namespace of the waypoint: connect_originate accepts the identities
	// of this namespace.
	Namespace string
	// Bind is the wildcard address connect_terminate listens on
	// ("0.0.0.0" when empty).
	Bind string
	// Tracing is the tracing block of the HTTP connection managers of
	// main_internal (nil: none).
	Tracing *hcm.HttpConnectionManager_Tracing
	// AccessLogs are the waypoint's access logs (its Telemetry's for
	// inbound traffic, else the mesh config's file log; nil: none).
	// main_internal's chains log everything; the listeners only
	// connections no chain took; HBONE origination only upstream
	// failures; HBONE termination only responses of 400 and above, as
	// Istio filters them.
	AccessLogs []*accesslogv3.AccessLog
	// Routes translates VirtualService routes (LookupService, Hash,
	// MeshRetry); destination clusters are renamed to inbound-vip ones
	// for the waypoint's own services (see IsWaypointService).
	Routes route.Options
	// IsWaypointService tells a host whose traffic this waypoint takes
	// (routes to it go to its inbound-vip cluster, others to outbound).
	IsWaypointService func(host string) bool
	// DirectHTTPPolicy and DirectTCPPolicy are the authorization filters
	// of the direct-http and direct-tcp chains.
	DirectHTTPPolicy []*hcm.HttpFilter
	DirectTCPPolicy  []*listenerv3.Filter
	// Workloads are the addresses of the workloads that send through the
	// waypoint (workload addressing: they reach the direct chains).
	Workloads []netip.Addr
	// IPMode of the waypoint: the family its DNS clusters resolve and the
	// gateways it can reach.
	IPMode model.IPMode
}

func (o Options) trustDomain() string {
	if td := o.Mesh.GetTrustDomain(); td != "" {
		return td
	}
	return "cluster.local"
}

// connectTLSContext is the mTLS context of HBONE, both directions: the
// workload certificate, TLS 1.3 only, h2, and peers of the mesh's trust
// domains (and aliases).
func connectTLSContext(o Options) *tlsv3.CommonTlsContext {
	vc := &tlsv3.CertificateValidationContext{}
	tds := authn.TrustDomainsForValidation(o.Mesh)
	if len(tds) == 0 {
		tds = []string{o.trustDomain()}
	}
	for _, td := range tds {
		vc.MatchTypedSubjectAltNames = append(vc.MatchTypedSubjectAltNames, uriPrefix("spiffe://"+td+"/"))
	}
	return &tlsv3.CommonTlsContext{
		TlsParams: &tlsv3.TlsParameters{TlsMinimumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
			TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3},
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{authn.SDSSecretConfig(authn.SDSDefault)},
		ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext:         vc,
			ValidationContextSdsSecretConfig: authn.SDSSecretConfig(authn.SDSRootCA),
		}},
		AlpnProtocols: []string{"h2"},
	}
}
