package authn

import (
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// SDS names of the Istio agent: the workload certificate, the mesh root,
// and the clusters that serve them.
const (
	SDSDefault      = "default"
	SDSRootCA       = "ROOTCA"
	SDSCluster      = "sds-grpc"
	SDSFilesCluster = "sds-files-grpc"
)

// TLSTransportSocketName is the name of Envoy's TLS transport socket.
const TLSTransportSocketName = "envoy.transport_sockets.tls"

// DefaultCipherSuites are the cipher suites of Istio's inbound mTLS when
// meshMTLS.cipherSuites is unset.
var defaultCipherSuites = []string{
	"ECDHE-ECDSA-AES256-GCM-SHA384",
	"ECDHE-RSA-AES256-GCM-SHA384",
	"ECDHE-ECDSA-AES128-GCM-SHA256",
	"ECDHE-RSA-AES128-GCM-SHA256",
	"AES256-GCM-SHA384",
	"AES128-GCM-SHA256",
}

// DefaultCipherSuites returns a copy of Istio's default inbound cipher
// suites.
func DefaultCipherSuites() []string { return append([]string(nil), defaultCipherSuites...) }

// TLSOptions are the settings of the inbound mTLS context.
type TLSOptions struct {
	// TrustDomains are the trust domains a client certificate may come
	// from: one SAN prefix matcher spiffe://<td>/ each, in order. Istio
	// uses the mesh trustDomain, its trustDomainAliases and the
	// trustDomains of caCertificates (TrustDomainsForValidation); nil means
	// no SAN check (PILOT_SKIP_VALIDATE_TRUST_DOMAIN).
	TrustDomains []string
	// MinProtocolVersion is the lowest TLS version accepted: TLSv1_2
	// unless meshMTLS.minProtocolVersion is TLSV1_3. TLS_AUTO (the zero
	// value) means TLSv1_2. The highest is always TLSv1_3.
	MinProtocolVersion tlsv3.TlsParameters_TlsProtocol
	// CipherSuites replace the default suites (meshMTLS.cipherSuites).
	CipherSuites []string
	// NoPeerExchangeALPN leaves istio-peer-exchange out of the TCP
	// context's ALPN (PILOT_DISABLE_MX_ALPN, or metadata exchange off).
	NoPeerExchangeALPN bool
	// Certs are the proxy's own certificate files, when its metadata names
	// them; the zero value uses the agent's SDS secrets.
	Certs ServerCerts
}

// ServerCerts are certificate files a proxy declares in its metadata
// (TLS_SERVER_CERT_CHAIN, TLS_SERVER_KEY, TLS_SERVER_ROOT_CERT), served by
// the agent over SDS as file-cert:<chain>~<key> and file-root:<root>;
// FileSDS ("file-credential": "true") fetches them from the sds-files-grpc
// cluster instead of sds-grpc.
type ServerCerts struct {
	CertChain, Key, RootCert string
	FileSDS                  bool
}

// ServerCertsFromMetadata reads a proxy's ServerCerts from its metadata.
func ServerCertsFromMetadata(md *model.NodeMetadata) ServerCerts {
	if md == nil {
		return ServerCerts{}
	}
	str := func(k string) string {
		s, _ := md.Raw[k].(string)
		return s
	}
	return ServerCerts{
		CertChain: str("TLS_SERVER_CERT_CHAIN"),
		Key:       str("TLS_SERVER_KEY"),
		RootCert:  str("TLS_SERVER_ROOT_CERT"),
		FileSDS:   str("file-credential") == "true",
	}
}

// TLSOptionsFromMesh derives TLSOptions from the mesh configuration (nil:
// defaults) as Istio does.
func TLSOptionsFromMesh(m *meshconfig.MeshConfig) TLSOptions {
	out := TLSOptions{
		TrustDomains:       TrustDomainsForValidation(m),
		MinProtocolVersion: tlsv3.TlsParameters_TLSv1_2,
	}
	if m.GetMeshMTLS().GetMinProtocolVersion() == meshconfig.MeshConfig_TLSConfig_TLSV1_3 {
		out.MinProtocolVersion = tlsv3.TlsParameters_TLSv1_3
	}
	if cs := m.GetMeshMTLS().GetCipherSuites(); cs != nil {
		out.CipherSuites = append([]string(nil), cs...)
	}
	return out
}

// TrustDomainsForValidation returns the trust domain of the mesh (default
// cluster.local), its aliases and the trust domains of its caCertificates,
// without empty names or repeats.
func TrustDomainsForValidation(m *meshconfig.MeshConfig) []string {
	td := m.GetTrustDomain()
	if m == nil {
		td = "cluster.local"
	}
	all := append([]string{td}, m.GetTrustDomainAliases()...)
	for _, ca := range m.GetCaCertificates() {
		all = append(all, ca.GetTrustDomains()...)
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(all))
	for _, d := range all {
		if d != "" && !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// DownstreamTLSContext builds Istio's inbound mTLS context for chains of
// protocol p (ListenerHTTP or ListenerTCP): the workload certificate and
// the root from SDS, a client certificate required and checked against the
// trust domains, TLS 1.2 (or the mesh minimum) to 1.3 with Istio's cipher
// suites, and ALPN h2, http/1.1, preceded for TCP by istio-peer-exchange.
func DownstreamTLSContext(p ListenerProtocol, o TLSOptions) *tlsv3.DownstreamTlsContext {
	alpn := []string{"h2", "http/1.1"}
	if p != ListenerHTTP && !o.NoPeerExchangeALPN {
		alpn = []string{"istio-peer-exchange", "h2", "http/1.1"}
	}
	ciphers := o.CipherSuites
	if ciphers == nil {
		ciphers = defaultCipherSuites
	}
	minVersion := o.MinProtocolVersion
	if minVersion == tlsv3.TlsParameters_TLS_AUTO {
		minVersion = tlsv3.TlsParameters_TLSv1_2
	}
	sans := make([]*matcherv3.StringMatcher, 0, len(o.TrustDomains))
	for _, td := range o.TrustDomains {
		sans = append(sans, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "spiffe://" + td + "/"}})
	}
	return &tlsv3.DownstreamTlsContext{
		CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsParams: &tlsv3.TlsParameters{
				TlsMinimumProtocolVersion: minVersion,
				TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
				CipherSuites:              append([]string(nil), ciphers...),
			},
			TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{o.Certs.certificate()},
			ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{
				CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
					DefaultValidationContext:         &tlsv3.CertificateValidationContext{MatchSubjectAltNames: sans},
					ValidationContextSdsSecretConfig: o.Certs.root(),
				},
			},
			AlpnProtocols: alpn,
		},
		RequireClientCertificate: wrapperspb.Bool(true),
	}
}

func (c ServerCerts) certificate() *tlsv3.SdsSecretConfig {
	if c.CertChain != "" && c.Key != "" {
		return c.sds("file-cert:" + c.CertChain + "~" + c.Key)
	}
	return SDSSecretConfig(SDSDefault)
}

func (c ServerCerts) root() *tlsv3.SdsSecretConfig {
	if c.RootCert != "" {
		return c.sds("file-root:" + c.RootCert)
	}
	return SDSSecretConfig(SDSRootCA)
}

func (c ServerCerts) sds(name string) *tlsv3.SdsSecretConfig {
	cluster := SDSCluster
	if c.FileSDS {
		cluster = SDSFilesCluster
	}
	return SDSSecretConfigFrom(name, cluster, false)
}

// SDSSecretConfig points a secret at the agent's SDS server (sds-grpc).
// The agent's own secrets, default and ROOTCA, do not wait for the first
// fetch (initialFetchTimeout 0s), as Istio's.
func SDSSecretConfig(name string) *tlsv3.SdsSecretConfig {
	return SDSSecretConfigFrom(name, SDSCluster, name == SDSDefault || name == SDSRootCA)
}

// SDSSecretConfigFrom points a secret at the SDS server behind cluster
// (sds-grpc, or the agent's file and external servers); noInitialWait
// sets initialFetchTimeout 0s.
func SDSSecretConfigFrom(name, cluster string, noInitialWait bool) *tlsv3.SdsSecretConfig {
	src := &core.ConfigSource{
		ConfigSourceSpecifier: &core.ConfigSource_ApiConfigSource{ApiConfigSource: &core.ApiConfigSource{
			ApiType:                   core.ApiConfigSource_GRPC,
			TransportApiVersion:       core.ApiVersion_V3,
			SetNodeOnFirstMessageOnly: true,
			GrpcServices: []*core.GrpcService{{TargetSpecifier: &core.GrpcService_EnvoyGrpc_{
				EnvoyGrpc: &core.GrpcService_EnvoyGrpc{ClusterName: cluster}}}},
		}},
		ResourceApiVersion: core.ApiVersion_V3,
	}
	if noInitialWait {
		src.InitialFetchTimeout = durationpb.New(0)
	}
	return &tlsv3.SdsSecretConfig{Name: name, SdsConfig: src}
}

// TransportSocket wraps a downstream context in Envoy's TLS transport
// socket (deterministically packed).
func TransportSocket(ctx *tlsv3.DownstreamTlsContext) *core.TransportSocket {
	return &core.TransportSocket{
		Name:       TLSTransportSocketName,
		ConfigType: &core.TransportSocket_TypedConfig{TypedConfig: protoconv.MessageToAny(ctx)},
	}
}

// InboundTLS holds the two inbound mTLS transport sockets of a proxy, HTTP
// and TCP. They depend on the options only, not on the mode, so one value
// serves every chain of a proxy (and every proxy with the same options).
// The sockets are shared: callers must not modify them.
type InboundTLS struct {
	HTTP, TCP *core.TransportSocket
}

// NewInboundTLS builds the sockets.
func NewInboundTLS(o TLSOptions) InboundTLS {
	return InboundTLS{
		HTTP: TransportSocket(DownstreamTLSContext(ListenerHTTP, o)),
		TCP:  TransportSocket(DownstreamTLSContext(ListenerTCP, o)),
	}
}

// For returns the transport socket of a chain: nil unless it terminates
// mTLS, else the socket of its protocol.
func (t InboundTLS) For(c Chain) *core.TransportSocket {
	switch {
	case !c.MTLS:
		return nil
	case c.Protocol == ListenerHTTP:
		return t.HTTP
	default:
		return t.TCP
	}
}

// CertificateSecret is the SDS secret of the certificate (the declared
// files, else the workload's own "default").
func (c ServerCerts) CertificateSecret() *tlsv3.SdsSecretConfig { return c.certificate() }

// RootSecret is the SDS secret of the root (the declared file, else
// ROOTCA).
func (c ServerCerts) RootSecret() *tlsv3.SdsSecretConfig { return c.root() }
