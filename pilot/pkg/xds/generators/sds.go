package generators

import (
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/meshplane/istiod/pilot/pkg/credentials"
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/gateway"
	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// CredentialSource resolves the certificate in Secret namespace/name (the
// CA for a name ending in -cacert), checked.
type CredentialSource interface {
	Lookup(namespace, name string) (credentials.CertInfo, error)
}

// RegisterSDS installs the SDS generator: certificates named by the
// credentialName of Gateway servers and of DestinationRules, served over
// ADS.
func (g *SidecarGenerators) RegisterSDS(s *xds.DiscoveryServer) {
	g.enc = s.Encodings()
	s.RegisterGenerator(xds.SecretType, xds.GeneratorFunc(g.secrets))
}

// secrets serves the requested certificates a proxy may read, only over
// the TLS port (a verified identity): for a gateway those its Gateways
// reference from its own namespace (gateway.Merged.Credentials), as Istio
// does; for a gateway or a sidecar the Secrets of its own namespace that
// the DestinationRules it sees name for TLS origination (credentialName).
// Istio lets a proxy read any Secret of its namespace its service account
// may read; ours serves only what its configuration references. A
// certificate that is missing or invalid is left out; the listener has
// already left out the server that needs it.
func (g *SidecarGenerators) secrets(proxy *model.Proxy, w *xds.WatchedResource, req *model.PushRequest) (xds.Generated, error) {
	var out xds.Generated
	if (proxy.Type != model.Router && proxy.Type != model.SidecarProxy) || g.Credentials == nil || proxy.VerifiedIdentity == nil {
		return out, nil
	}
	var gatewayCreds map[string]bool
	if proxy.Type == model.Router {
		gatewayCreds = g.mergedGateway(req.Push, proxy).Credentials
	}
	var ruleCreds map[string]bool // computed on first need
	var secrets []*tlsv3.Secret
	for _, name := range w.Names() {
		ref, ok := gateway.ParseResourceName(name, proxy.VerifiedIdentity.Namespace)
		if !ok || ref.ConfigMap {
			continue
		}
		if !gatewayCreds[name] {
			if ruleCreds == nil {
				ruleCreds = req.Push.DestinationRuleCredentials(proxy)
			}
			if !ruleCreds[name] || ref.Namespace != proxy.VerifiedIdentity.Namespace {
				genLog.Debugf("%s: SDS %s not served: no Gateway or DestinationRule of its namespace references it", proxy.ID, name)
				continue
			}
		}
		ci, err := g.Credentials.Lookup(ref.Namespace, ref.Name)
		if err != nil {
			genLog.Debugf("%s: SDS %s: %v", proxy.ID, name, err)
			continue
		}
		secrets = append(secrets, secretResource(name, ci))
	}
	return toResources(g.enc, xds.SecretType, secrets, func(s *tlsv3.Secret) string { return s.Name }), nil
}

// secretResource is the SDS form of a certificate or CA.
func secretResource(name string, ci credentials.CertInfo) *tlsv3.Secret {
	if ci.CA != nil {
		vc := &tlsv3.CertificateValidationContext{TrustedCa: inline(ci.CA)}
		if len(ci.CRL) > 0 {
			vc.Crl = inline(ci.CRL)
		}
		return &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_ValidationContext{ValidationContext: vc}}
	}
	tc := &tlsv3.TlsCertificate{CertificateChain: inline(ci.Cert), PrivateKey: inline(ci.Key)}
	if len(ci.Staple) > 0 {
		tc.OcspStaple = inline(ci.Staple)
	}
	return &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: tc}}
}

func inline(b []byte) *core.DataSource {
	return &core.DataSource{Specifier: &core.DataSource_InlineBytes{InlineBytes: b}}
}

// credentialError tells why the certificate behind an SDS name cannot be
// served to the proxy (nil: it can, or there is no source to check).
func (g *SidecarGenerators) credentialError(proxy *model.Proxy) func(string) error {
	if g.Credentials == nil {
		return nil
	}
	return func(name string) error {
		ref, ok := gateway.ParseResourceName(name, proxy.ConfigNamespace)
		if !ok || ref.ConfigMap {
			return nil
		}
		_, err := g.Credentials.Lookup(ref.Namespace, ref.Name)
		return err
	}
}
