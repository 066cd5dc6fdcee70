package cluster

import (
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	dfpclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dynamic_forward_proxy/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/networking/gateway"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// SDS names and clusters of user-supplied (SIMPLE, MUTUAL) TLS, as the
// Istio agent serves them.
const (
	// fileCertPrefix and fileRootPrefix name certificates the agent reads
	// from files in the proxy's pod and serves over SDS, so they rotate
	// (Envoy would not reload inline file data sources).
	fileCertPrefix = "file-cert:"
	fileRootPrefix = "file-root:"
	fileSeparator  = "~"
	// systemCA stands for the proxy's system trust store when the rule
	// names no CA.
	systemCA = "system"
	// sdsFilesCluster serves the files when the proxy has a file SDS
	// server of its own (file-credential node metadata).
	sdsFilesCluster = "sds-files-grpc"
	// sdsExternalCluster and sdsExternalPrefix: sds:// credentials come
	// from the proxy's own SDS server when it has one (credential node
	// metadata).
	sdsExternalCluster = "sds-external"
	sdsExternalPrefix  = "sds://"
	httpOptionsKey     = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
)

// skipCredential: a sidecar gets no SIMPLE or MUTUAL TLS from a rule that
// names a Secret unless the rule selects workloads, as in Istio: a
// namespace-wide rule would make every sidecar it reaches ask for (and
// wait on) a Secret it may not read. ConfigMaps are readable by anyone.
func skipCredential(s *networking.ClientTLSSettings, t tlsTarget) bool {
	if s.CredentialName == "" || strings.HasPrefix(s.CredentialName, gateway.ConfigMapPrefix) {
		return false
	}
	return t.sidecar && !t.drSelector
}

// userTLS is the context of SIMPLE and MUTUAL modes, as Istio builds it: a
// credential served by SDS, or files the agent serves by SDS (the system
// trust store when the rule names no CA). It also asks the cluster's HTTP
// options for auto SNI and SAN validation where the rule fixes neither.
// A MUTUAL rule with files but without certificate and key gets nil: no
// TLS, as Istio refuses to build it.
func userTLS(c *clusterv3.Cluster, s *networking.ClientTLSSettings, t tlsTarget) *tlsv3.UpstreamTlsContext {
	ctx := &tlsv3.UpstreamTlsContext{Sni: s.Sni, CommonTlsContext: defaultCommonTLS()}
	// before the accounts stand in for SANs: auto SAN validation is for
	// rules that name none
	setAutoSNI(c, s, t)
	sans := s.SubjectAltNames
	if t.external && len(sans) == 0 {
		sans = t.sans
	}
	mutual := s.Mode == networking.ClientTLSSettings_MUTUAL
	insecure := s.InsecureSkipVerify.GetValue()
	cc := ctx.CommonTlsContext
	if s.CredentialName != "" {
		if mutual {
			cc.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{credentialSDS(s.CredentialName, t.credentialSocket)}
		}
		if !insecure {
			cc.ValidationContextType = combinedValidation(sans, "", credentialSDS(s.CredentialName+gateway.CACertSuffix, t.credentialSocket))
		}
	} else {
		if mutual {
			if s.ClientCertificate == "" || s.PrivateKey == "" {
				return nil
			}
			cc.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{
				fileSDS(fileCertPrefix+s.ClientCertificate+fileSeparator+s.PrivateKey, t.fileCredentialSocket)}
		}
		if insecure {
			cc.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{}}
		} else {
			ca := s.CaCertificates
			if ca == "" {
				ca = systemCA
			}
			cc.ValidationContextType = combinedValidation(sans, s.CaCrl, fileSDS(fileRootPrefix+ca, t.fileCredentialSocket))
		}
	}
	if d := t.mesh.GetTlsDefaults(); d != nil {
		if len(d.EcdhCurves) > 0 {
			cc.TlsParams.EcdhCurves = d.EcdhCurves
		}
		if len(d.CipherSuites) > 0 {
			cc.TlsParams.CipherSuites = d.CipherSuites
		}
	}
	if !t.freshHTTP && isHTTP2Cluster(c) {
		cc.AlpnProtocols = []string{"h2"}
	}
	return ctx
}

// defaultCommonTLS is TLS 1.2 to 1.3, Istio's client default.
func defaultCommonTLS() *tlsv3.CommonTlsContext {
	return &tlsv3.CommonTlsContext{TlsParams: &tlsv3.TlsParameters{
		TlsMinimumProtocolVersion: tlsv3.TlsParameters_TLSv1_2,
		TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
	}}
}

// combinedValidation checks the peer against the SANs (and the CRL file)
// with the CA from SDS.
func combinedValidation(sans []string, crl string, ca *tlsv3.SdsSecretConfig) *tlsv3.CommonTlsContext_CombinedValidationContext {
	dv := &tlsv3.CertificateValidationContext{}
	for _, san := range sans {
		dv.MatchSubjectAltNames = append(dv.MatchSubjectAltNames, exactSAN(san))
	}
	if crl != "" {
		dv.Crl = &core.DataSource{Specifier: &core.DataSource_Filename{Filename: crl}}
	}
	return &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
		DefaultValidationContext: dv, ValidationContextSdsSecretConfig: ca}}
}

// fileSDS is a file secret from the agent; unlike its own certificate and
// root, without an initial fetch timeout, as Istio sends it.
func fileSDS(name string, ownServer bool) *tlsv3.SdsSecretConfig {
	cluster := sdsCluster
	if ownServer {
		cluster = sdsFilesCluster
	}
	return sdsSocketSecret(name, cluster)
}

func sdsSocketSecret(name, cluster string) *tlsv3.SdsSecretConfig {
	return authn.SDSSecretConfigFrom(name, cluster, false)
}

// credentialSDS is the secret a credentialName names: istiod serves it
// over ADS (kubernetes://<name> unless it carries a scheme), without an
// initial fetch timeout so a missing Secret does not hold the cluster;
// builtin:// is the workload's own certificate and root; sds:// comes from
// the proxy's own SDS server when it has one, else from istiod.
func credentialSDS(name string, ownServer bool) *tlsv3.SdsSecretConfig {
	switch name {
	case gateway.BuiltinPrefix:
		return SDSSecretConfig(SDSDefault)
	case gateway.BuiltinPrefix + gateway.CACertSuffix:
		return SDSSecretConfig(SDSRootCA)
	}
	if rest, ok := strings.CutPrefix(name, sdsExternalPrefix); ok {
		if ownServer {
			// the full name, which these servers expect
			return sdsSocketSecret(name, sdsExternalCluster)
		}
		name = rest
	}
	return &tlsv3.SdsSecretConfig{Name: gateway.ResourceName(name), SdsConfig: &core.ConfigSource{
		ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
		ResourceApiVersion:    core.ApiVersion_V3,
	}}
}

// isHTTP2Cluster tells a cluster whose HTTP options speak HTTP/2 (its port,
// or an h2 upgrade), which advertises h2 by ALPN.
func isHTTP2Cluster(c *clusterv3.Cluster) bool {
	a := c.TypedExtensionProtocolOptions[httpOptionsKey]
	if a == nil {
		return false
	}
	o := &httpv3.HttpProtocolOptions{}
	return a.UnmarshalTo(o) == nil && o.GetExplicitHttpConfig().GetHttp2ProtocolOptions() != nil
}

// setAutoSNI makes the cluster name each upstream by the request's host
// (auto_sni) unless the settings fix a server name, and check the peer's
// certificate against it (auto_san_validation) unless they skip
// verification or (outside forward proxies) name a server or SANs.
// A forward proxy must allow Envoy's insecure cluster options whenever
// it lacks either.
func setAutoSNI(c *clusterv3.Cluster, tls *networking.ClientTLSSettings, t tlsTarget) {
	insecure := tls.GetInsecureSkipVerify().GetValue()
	autoSNI := tls.GetSni() == ""
	autoSAN := (t.dfp || autoSNI && len(tls.GetSubjectAltNames()) == 0) && !insecure
	if t.dfp && (insecure || !autoSNI || !autoSAN) {
		ct := c.GetClusterType()
		var cfg dfpclusterv3.ClusterConfig
		if ct != nil && ct.GetTypedConfig().UnmarshalTo(&cfg) == nil {
			cfg.AllowInsecureClusterOptions = true
			ct.TypedConfig = protoconv.MessageToAny(&cfg)
		}
	}
	if !autoSNI && !autoSAN {
		return
	}
	h := httpOptions{}
	if a := c.TypedExtensionProtocolOptions[httpOptionsKey]; a != nil && !t.freshHTTP {
		o := &httpv3.HttpProtocolOptions{}
		if a.UnmarshalTo(o) == nil {
			h.o = o
		}
	}
	o := h.get()
	if o.UpstreamHttpProtocolOptions == nil {
		o.UpstreamHttpProtocolOptions = &core.UpstreamHttpProtocolOptions{}
	}
	o.UpstreamHttpProtocolOptions.AutoSni = o.UpstreamHttpProtocolOptions.AutoSni || autoSNI
	o.UpstreamHttpProtocolOptions.AutoSanValidation = o.UpstreamHttpProtocolOptions.AutoSanValidation || autoSAN
	h.finish(c)
}

// addALPNOverride marks a cluster whose rule originates TLS itself
// (SIMPLE, MUTUAL): the ALPN filter must leave the application's protocols
// alone.
func addALPNOverride(md *core.Metadata, mode networking.ClientTLSSettings_TLSmode) *core.Metadata {
	if mode != networking.ClientTLSSettings_SIMPLE && mode != networking.ClientTLSSettings_MUTUAL {
		return md
	}
	if md == nil {
		md = &core.Metadata{FilterMetadata: map[string]*structpb.Struct{}}
	}
	im := md.FilterMetadata["istio"]
	if im == nil {
		im = &structpb.Struct{Fields: map[string]*structpb.Value{}}
		md.FilterMetadata["istio"] = im
	}
	im.Fields["alpn_override"] = stringValue("false")
	return md
}
