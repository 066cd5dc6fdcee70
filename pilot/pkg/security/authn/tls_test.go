package authn_test

import (
	"reflect"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/security/authn"
)

func TestTLSOptionsFromMesh(t *testing.T) {
	o := authn.TLSOptionsFromMesh(nil)
	if !reflect.DeepEqual(o.TrustDomains, []string{"cluster.local"}) || o.MinProtocolVersion != tlsv3.TlsParameters_TLSv1_2 || o.CipherSuites != nil {
		t.Errorf("defaults: %+v", o)
	}
	m := &meshconfig.MeshConfig{
		TrustDomain:        "td",
		TrustDomainAliases: []string{"", "old", "td"},
		CaCertificates:     []*meshconfig.MeshConfig_CertificateData{{TrustDomains: []string{"old", "partner"}}},
		MeshMTLS:           &meshconfig.MeshConfig_TLSConfig{MinProtocolVersion: meshconfig.MeshConfig_TLSConfig_TLSV1_3, CipherSuites: []string{"X"}},
	}
	o = authn.TLSOptionsFromMesh(m)
	if !reflect.DeepEqual(o.TrustDomains, []string{"td", "old", "partner"}) || o.MinProtocolVersion != tlsv3.TlsParameters_TLSv1_3 ||
		!reflect.DeepEqual(o.CipherSuites, []string{"X"}) {
		t.Errorf("mesh: %+v", o)
	}
}

func TestDownstreamTLSContext(t *testing.T) {
	ctx := authn.DownstreamTLSContext(authn.ListenerTCP, authn.TLSOptions{NoPeerExchangeALPN: true})
	cc := ctx.GetCommonTlsContext()
	if !reflect.DeepEqual(cc.GetAlpnProtocols(), []string{"h2", "http/1.1"}) {
		t.Errorf("TCP without peer exchange: ALPN %v", cc.GetAlpnProtocols())
	}
	if cc.GetTlsParams().GetTlsMinimumProtocolVersion() != tlsv3.TlsParameters_TLSv1_2 ||
		!reflect.DeepEqual(cc.GetTlsParams().GetCipherSuites(), authn.DefaultCipherSuites()) {
		t.Errorf("zero options: %v", cc.GetTlsParams())
	}
	if sans := cc.GetCombinedValidationContext().GetDefaultValidationContext().GetMatchSubjectAltNames(); len(sans) != 0 {
		t.Errorf("no trust domains: SANs %v", sans)
	}
	if !ctx.GetRequireClientCertificate().GetValue() {
		t.Error("client certificate not required")
	}
	// A certificate chain without a key keeps the agent's default secret.
	ctx = authn.DownstreamTLSContext(authn.ListenerHTTP, authn.TLSOptions{Certs: authn.ServerCerts{CertChain: "/c"}})
	if n := ctx.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs()[0].GetName(); n != authn.SDSDefault {
		t.Errorf("certificate %s", n)
	}
}

func TestServerCertsFromMetadata(t *testing.T) {
	md := &model.NodeMetadata{Raw: map[string]any{"TLS_SERVER_CERT_CHAIN": "/c", "TLS_SERVER_KEY": "/k", "file-credential": "true"}}
	want := authn.ServerCerts{CertChain: "/c", Key: "/k", FileSDS: true}
	if got := authn.ServerCertsFromMetadata(md); got != want {
		t.Errorf("got %+v", got)
	}
	if got := authn.ServerCertsFromMetadata(nil); got != (authn.ServerCerts{}) {
		t.Errorf("nil: %+v", got)
	}
}

func TestSDSSecretConfig(t *testing.T) {
	if authn.SDSSecretConfig(authn.SDSDefault).GetSdsConfig().GetInitialFetchTimeout() == nil ||
		authn.SDSSecretConfig(authn.SDSRootCA).GetSdsConfig().GetInitialFetchTimeout() == nil {
		t.Error("default and ROOTCA must not wait for the first fetch")
	}
	if authn.SDSSecretConfig("other").GetSdsConfig().GetInitialFetchTimeout() != nil {
		t.Error("other secrets keep Envoy's initial fetch timeout")
	}
}
