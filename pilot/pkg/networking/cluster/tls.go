package cluster

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rawbuffer "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/networking/protoconv"
)

// SDS secret names the Istio agent serves.
const (
	SDSDefault = "default"
	SDSRootCA  = "ROOTCA"
	sdsCluster = "sds-grpc"
)

// SDSSecretConfig points a secret at the agent's SDS server.
func SDSSecretConfig(name string) *tlsv3.SdsSecretConfig {
	return &tlsv3.SdsSecretConfig{
		Name: name,
		SdsConfig: &core.ConfigSource{
			ConfigSourceSpecifier: &core.ConfigSource_ApiConfigSource{ApiConfigSource: &core.ApiConfigSource{
				ApiType:                   core.ApiConfigSource_GRPC,
				TransportApiVersion:       core.ApiVersion_V3,
				SetNodeOnFirstMessageOnly: true,
				GrpcServices: []*core.GrpcService{{TargetSpecifier: &core.GrpcService_EnvoyGrpc_{
					EnvoyGrpc: &core.GrpcService_EnvoyGrpc{ClusterName: sdsCluster}}}},
			}},
			InitialFetchTimeout: durationpb.New(0),
			ResourceApiVersion:  core.ApiVersion_V3,
		},
	}
}

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

// applyTLS sets the upstream TLS of a cluster from the destination rule, or
// auto mTLS when the rule says nothing and the mesh enables it. Istio mTLS
// checks the peer against the service's accounts (sans) when it has any.
func applyTLS(c *clusterv3.Cluster, settings *networking.ClientTLSSettings, sni string, autoMTLS, http2 bool, sans []string) {
	if settings == nil {
		if autoMTLS {
			c.TransportSocketMatches = autoMTLSMatches(sni, sans, http2)
		}
		return
	}
	switch settings.Mode {
	case networking.ClientTLSSettings_DISABLE:
		return
	case networking.ClientTLSSettings_ISTIO_MUTUAL:
		ctx := istioMutual(sni, sans, http2)
		if settings.Sni != "" {
			ctx.Sni = settings.Sni
		}
		c.TransportSocket = tlsSocket(ctx)
	case networking.ClientTLSSettings_SIMPLE, networking.ClientTLSSettings_MUTUAL:
		c.TransportSocket = tlsSocket(userTLS(settings))
	}
}

// userTLS is the context of SIMPLE and MUTUAL modes: files, or a credential
// served by SDS as kubernetes://<credentialName>.
func userTLS(s *networking.ClientTLSSettings) *tlsv3.UpstreamTlsContext {
	ctx := &tlsv3.UpstreamTlsContext{Sni: s.Sni, CommonTlsContext: &tlsv3.CommonTlsContext{}}
	if s.InsecureSkipVerify.GetValue() {
		return ctx
	}
	cc := ctx.CommonTlsContext
	if s.CredentialName != "" {
		name := "kubernetes://" + s.CredentialName
		if s.Mode == networking.ClientTLSSettings_MUTUAL {
			cc.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{SDSSecretConfig(name)}
		}
		cc.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext:         validation(s),
			ValidationContextSdsSecretConfig: SDSSecretConfig(name + "-cacert"),
		}}
		return ctx
	}
	if s.Mode == networking.ClientTLSSettings_MUTUAL {
		cc.TlsCertificates = []*tlsv3.TlsCertificate{{
			CertificateChain: &core.DataSource{Specifier: &core.DataSource_Filename{Filename: s.ClientCertificate}},
			PrivateKey:       &core.DataSource{Specifier: &core.DataSource_Filename{Filename: s.PrivateKey}},
		}}
	}
	v := validation(s)
	if s.CaCertificates != "" {
		v.TrustedCa = &core.DataSource{Specifier: &core.DataSource_Filename{Filename: s.CaCertificates}}
	}
	cc.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: v}
	return ctx
}

func validation(s *networking.ClientTLSSettings) *tlsv3.CertificateValidationContext {
	v := &tlsv3.CertificateValidationContext{}
	for _, san := range s.SubjectAltNames {
		v.MatchSubjectAltNames = append(v.MatchSubjectAltNames, exactSAN(san))
	}
	return v
}
