package cluster

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rawbuffer "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/structpb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// SDS secret names the Istio agent serves.
const (
	SDSDefault = "default"
	SDSRootCA  = "ROOTCA"
	sdsCluster = authn.SDSCluster
)

// SDSSecretConfig points one of the agent's own secrets (default, ROOTCA)
// at its SDS server.
func SDSSecretConfig(name string) *tlsv3.SdsSecretConfig { return authn.SDSSecretConfig(name) }

func tlsSocket(ctx *tlsv3.UpstreamTlsContext) *core.TransportSocket {
	a := protoconv.MessageToAny(ctx)
	return &core.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &core.TransportSocket_TypedConfig{TypedConfig: a}}
}

func rawBufferSocket() *core.TransportSocket {
	a := protoconv.MessageToAny(&rawbuffer.RawBuffer{})
	return &core.TransportSocket{Name: "envoy.transport_sockets.raw_buffer", ConfigType: &core.TransportSocket_TypedConfig{TypedConfig: a}}
}

// istioMutual is the mTLS context of Istio's workload identities: the
// agent's certificate and root via SDS.
func istioMutual(sni string, sans []string, http2 bool) *tlsv3.UpstreamTlsContext {
	alpn := []string{"istio-peer-exchange", "istio"}
	if http2 {
		alpn = append(alpn, "h2")
	}
	dv := &tlsv3.CertificateValidationContext{}
	for _, san := range sans {
		dv.MatchSubjectAltNames = append(dv.MatchSubjectAltNames, exactSAN(san))
	}
	return &tlsv3.UpstreamTlsContext{
		Sni: sni,
		CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsParams: &tlsv3.TlsParameters{
				TlsMinimumProtocolVersion: tlsv3.TlsParameters_TLSv1_2,
				TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
			},
			TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{SDSSecretConfig(SDSDefault)},
			ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext:         dv,
				ValidationContextSdsSecretConfig: SDSSecretConfig(SDSRootCA),
			}},
			AlpnProtocols: alpn,
		},
	}
}

// autoMTLSMatches sends mTLS to endpoints labeled tlsMode=istio and plain
// text to the others.
func autoMTLSMatches(sni string, sans []string, http2 bool) []*clusterv3.Cluster_TransportSocketMatch {
	return []*clusterv3.Cluster_TransportSocketMatch{
		{
			Name:            "tlsMode-istio",
			Match:           &structpb.Struct{Fields: map[string]*structpb.Value{"tlsMode": structpb.NewStringValue("istio")}},
			TransportSocket: tlsSocket(istioMutual(sni, sans, http2)),
		},
		{
			Name:            "tlsMode-disabled",
			Match:           &structpb.Struct{},
			TransportSocket: rawBufferSocket(),
		},
	}
}

// tlsTarget is what applyTLS needs to know of the cluster besides the
// rule's settings.
type tlsTarget struct {
	// sni is the Istio mTLS server name the cluster gets when the rule
	// names none (empty for forward proxies, which send the host's).
	sni      string
	autoMTLS bool
	// originalDst: an ORIGINAL_DST cluster (a sidecar's of a headless
	// service), which takes auto mTLS as its transport socket, not as
	// matches by endpoint (Istio's applyUpstreamTLSSettings)
	originalDst bool
	// http2 is the port's protocol, which picks the Istio mTLS ALPN.
	http2 bool
	// sans are the service's accounts: Istio mTLS checks the peer against
	// them, and a ServiceEntry's (external) stand in for SIMPLE and
	// MUTUAL subjectAltNames the rule leaves empty.
	sans     []string
	external bool
	// dfp marks dynamic forward proxy clusters, which name and verify each
	// resolved host; freshHTTP (the ALLOW_ANY_DYNAMIC_DNS cluster) makes
	// the options auto SNI asks for replace the cluster's, as in Istio,
	// where that cluster's protocol options are not tracked.
	dfp, freshHTTP bool
	// sidecar with drSelector: see skipCredential.
	sidecar, drSelector bool
	mesh                *meshconfig.MeshConfig
	// credentialSocket and fileCredentialSocket are the proxy's
	// "credential" and "file-credential" node metadata: an SDS server of
	// its own for sds:// credentials, and one for files.
	credentialSocket, fileCredentialSocket bool
}

// applyTLS sets the upstream TLS of a cluster from the destination rule, or
// auto mTLS when the rule says nothing and the mesh enables it. Istio mTLS
// checks the peer against the service's accounts (sans) when it has any.
func applyTLS(c *clusterv3.Cluster, settings *networking.ClientTLSSettings, t tlsTarget) {
	if settings == nil {
		if t.autoMTLS && t.originalDst {
			c.TransportSocket = tlsSocket(istioMutual(t.sni, t.sans, t.http2))
		} else if t.autoMTLS {
			c.TransportSocketMatches = autoMTLSMatches(t.sni, t.sans, t.http2)
			if t.dfp {
				// auto mTLS is Istio mTLS without a server name of its own
				setAutoSNI(c, &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL}, t)
			}
		}
		return
	}
	switch settings.Mode {
	case networking.ClientTLSSettings_DISABLE:
		return
	case networking.ClientTLSSettings_ISTIO_MUTUAL:
		ctx := istioMutual(t.sni, t.sans, t.http2)
		if settings.Sni != "" {
			ctx.Sni = settings.Sni
		}
		c.TransportSocket = tlsSocket(ctx)
		if t.dfp {
			setAutoSNI(c, settings, t)
		}
	case networking.ClientTLSSettings_SIMPLE, networking.ClientTLSSettings_MUTUAL:
		if skipCredential(settings, t) {
			return
		}
		if ctx := userTLS(c, settings, t); ctx != nil {
			c.TransportSocket = tlsSocket(ctx)
		}
	}
}
