package listener

import (
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/networking/gateway"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/config/security"
)

// GatewayTLS are the mesh and proxy inputs of a gateway server's TLS.
type GatewayTLS struct {
	// Defaults are the mesh's tlsDefaults (ECDH curves, cipher suites) of
	// SIMPLE and MUTUAL servers.
	Defaults *meshconfig.MeshConfig_TLSConfig
	// Certs are the proxy's own certificate files (ISTIO_MUTUAL and file
	// based servers use the agent's SDS for them).
	Certs authn.ServerCerts
	// CredentialError tells why the certificate behind an SDS resource
	// name cannot be served (nil func: not checked). A server whose
	// certificate cannot be served is left out: Envoy would otherwise keep
	// the whole listener warming, waiting for it.
	CredentialError func(resource string) error
}

// credentialsError is the first reason a server's credentials cannot be
// served: its certificates, and under MUTUAL its CA.
func (o GatewayOptions) credentialsError(s *networking.Server) error {
	check := o.TLSInputs.CredentialError
	t := s.GetTls()
	if check == nil || t == nil || t.Mode == networking.ServerTLSSettings_ISTIO_MUTUAL {
		return nil
	}
	names := t.CredentialNames
	if len(names) == 0 && t.CredentialName != "" {
		names = []string{t.CredentialName}
	}
	if len(names) == 0 {
		return nil
	}
	all := append([]string(nil), names...)
	if t.Mode == networking.ServerTLSSettings_MUTUAL || t.Mode == networking.ServerTLSSettings_OPTIONAL_MUTUAL {
		ca := names[0] + gateway.CACertSuffix
		if t.CaCertCredentialName != "" {
			ca = t.CaCertCredentialName
		}
		all = append(all, ca)
	}
	for _, n := range all {
		if strings.HasPrefix(n, gateway.BuiltinPrefix) {
			continue
		}
		if err := check(gateway.ResourceName(n)); err != nil {
			return err
		}
	}
	return nil
}

// serverTLS is the downstream TLS context of a server that terminates TLS,
// as Istio builds it: certificates from istiod over ADS for credentialName
// (with <name>-cacert to validate clients under MUTUAL), the workload's own
// certificate for ISTIO_MUTUAL, or the files the server names; ALPN h2 and
// http/1.1 (with istio-peer-exchange first for ISTIO_MUTUAL TCP servers).
func (o GatewayOptions) serverTLS(s *networking.Server) *tlsv3.DownstreamTlsContext {
	t := s.GetTls()
	if t == nil || gateway.IsPassthrough(s) {
		return nil
	}
	alpn := []string{"h2", "http/1.1"}
	if t.Mode == networking.ServerTLSSettings_ISTIO_MUTUAL && gateway.IsTCPTerminated(s) {
		alpn = []string{"istio-peer-exchange", "h2", "http/1.1"}
	}
	ctx := &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{AlpnProtocols: alpn}}
	require := t.Mode == networking.ServerTLSSettings_MUTUAL || t.Mode == networking.ServerTLSSettings_ISTIO_MUTUAL
	ctx.RequireClientCertificate = wrapperspb.Bool(require)
	validate := require || t.Mode == networking.ServerTLSSettings_OPTIONAL_MUTUAL
	common := ctx.CommonTlsContext
	switch {
	case t.Mode == networking.ServerTLSSettings_ISTIO_MUTUAL:
		common.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{o.TLSInputs.Certs.CertificateSecret()}
		if validate {
			common.ValidationContextType = combined(exactSANs(t.SubjectAltNames), o.TLSInputs.Certs.RootSecret())
		}
	case len(t.CredentialNames) > 0 || t.CredentialName != "":
		applyCredentials(common, t)
	default:
		files := authn.ServerCerts{CertChain: t.ServerCertificate, Key: t.PrivateKey, RootCert: t.CaCertificates,
			FileSDS: o.TLSInputs.Certs.FileSDS}
		common.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{files.CertificateSecret()}
		if validate {
			common.ValidationContextType = combined(exactSANs(t.SubjectAltNames), files.RootSecret())
		}
	}
	switch t.Mode {
	case networking.ServerTLSSettings_SIMPLE, networking.ServerTLSSettings_MUTUAL, networking.ServerTLSSettings_OPTIONAL_MUTUAL:
		applyTLSDefaults(common, o.TLSInputs.Defaults)
		applyServerTLSVersions(common, t)
	}
	return ctx
}

// applyCredentials points the certificates at istiod's SDS over ADS.
func applyCredentials(common *tlsv3.CommonTlsContext, t *networking.ServerTLSSettings) {
	ca := t.CredentialName + gateway.CACertSuffix
	if len(t.CredentialNames) > 0 {
		for _, n := range t.CredentialNames {
			common.TlsCertificateSdsSecretConfigs = append(common.TlsCertificateSdsSecretConfigs, credentialSecret(n))
		}
		ca = t.CredentialNames[0] + gateway.CACertSuffix
	} else {
		common.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{credentialSecret(t.CredentialName)}
	}
	if t.CaCertCredentialName != "" {
		ca = t.CaCertCredentialName
	}
	switch {
	case t.Mode == networking.ServerTLSSettings_MUTUAL || t.Mode == networking.ServerTLSSettings_OPTIONAL_MUTUAL:
		def := &tlsv3.CertificateValidationContext{MatchSubjectAltNames: exactSANs(t.SubjectAltNames),
			VerifyCertificateSpki: t.VerifyCertificateSpki, VerifyCertificateHash: t.VerifyCertificateHash}
		if t.GetInsecureSkipVerify().GetValue() {
			def.TrustChainVerification = tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED
		}
		common.ValidationContextType = &tlsv3.CommonTlsContext_CombinedValidationContext{
			CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext: def, ValidationContextSdsSecretConfig: credentialSecret(ca)}}
	case len(t.SubjectAltNames) > 0:
		common.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{
			ValidationContext: &tlsv3.CertificateValidationContext{MatchSubjectAltNames: exactSANs(t.SubjectAltNames)}}
	}
}

// credentialSecret is an SDS secret istiod serves over ADS; builtin://
// names the workload's own certificate (and root, with -cacert).
func credentialSecret(name string) *tlsv3.SdsSecretConfig {
	switch name {
	case gateway.BuiltinPrefix:
		return authn.SDSSecretConfig(authn.SDSDefault)
	case gateway.BuiltinPrefix + gateway.CACertSuffix:
		return authn.SDSSecretConfig(authn.SDSRootCA)
	}
	return &tlsv3.SdsSecretConfig{Name: gateway.ResourceName(name), SdsConfig: &core.ConfigSource{
		ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
		ResourceApiVersion:    core.ApiVersion_V3}}
}

func combined(sans []*matcherv3.StringMatcher, root *tlsv3.SdsSecretConfig) *tlsv3.CommonTlsContext_CombinedValidationContext {
	return &tlsv3.CommonTlsContext_CombinedValidationContext{
		CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext:         &tlsv3.CertificateValidationContext{MatchSubjectAltNames: sans},
			ValidationContextSdsSecretConfig: root}}
}

func exactSANs(sans []string) []*matcherv3.StringMatcher {
	if len(sans) == 0 {
		return nil
	}
	out := make([]*matcherv3.StringMatcher, 0, len(sans))
	for _, s := range sans {
		out = append(out, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: s}})
	}
	return out
}

func tlsParams(c *tlsv3.CommonTlsContext) *tlsv3.TlsParameters {
	if c.TlsParams == nil {
		c.TlsParams = &tlsv3.TlsParameters{}
	}
	return c.TlsParams
}

func applyTLSDefaults(c *tlsv3.CommonTlsContext, d *meshconfig.MeshConfig_TLSConfig) {
	if len(d.GetEcdhCurves()) > 0 {
		tlsParams(c).EcdhCurves = d.EcdhCurves
	}
	if len(d.GetCipherSuites()) > 0 {
		tlsParams(c).CipherSuites = d.CipherSuites
	}
}

// applyServerTLSVersions sets the server's TLS versions and cipher suites
// (the enums of both APIs line up: TLS_AUTO, TLSv1_0 ... TLSv1_3). Unknown
// and repeated suites are dropped, which Envoy would NACK, as Istio drops
// them for gateways and sidecars; validation warns about them. With none
// left, the mesh's tlsDefaults stay.
func applyServerTLSVersions(c *tlsv3.CommonTlsContext, t *networking.ServerTLSSettings) {
	if v := t.MinProtocolVersion; v != networking.ServerTLSSettings_TLS_AUTO {
		tlsParams(c).TlsMinimumProtocolVersion = tlsVersion(v)
	}
	if suites := security.FilterCipherSuites(t.CipherSuites); len(suites) > 0 {
		tlsParams(c).CipherSuites = suites
	}
	if v := t.MaxProtocolVersion; v != networking.ServerTLSSettings_TLS_AUTO {
		tlsParams(c).TlsMaximumProtocolVersion = tlsVersion(v)
	}
}

func tlsVersion(v networking.ServerTLSSettings_TLSProtocol) tlsv3.TlsParameters_TlsProtocol {
	out := tlsv3.TlsParameters_TlsProtocol(v)
	if out < tlsv3.TlsParameters_TLS_AUTO || out > tlsv3.TlsParameters_TLSv1_3 {
		return tlsv3.TlsParameters_TLS_AUTO
	}
	return out
}
