package cluster_test

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
	"istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// externalService is a ServiceEntry host with a declared account.
func externalService(p protocol.Instance) *model.Service {
	svc := service("api", "ns", 443, p, model.DNSLB)
	svc.Hostname = "api.example.com"
	svc.MeshExternal = true
	svc.Attributes.ServiceRegistry = model.External
	svc.ServiceAccounts = []string{"spiffe://example.com/api"}
	return svc
}

// tlsClusters builds the clusters of svc under a rule with tp and subsets.
func tlsClusters(t *testing.T, svc *model.Service, dr *networking.DestinationRule, opts cluster.Options) map[string]*clusterv3.Cluster {
	t.Helper()
	dr.Host = svc.Hostname
	if opts.Mesh == nil {
		opts.Mesh = mesh.DefaultMeshConfig()
	}
	opts.DestinationRule = &config.Config{Meta: config.Meta{GroupVersionKind: gvk.DestinationRule, Name: "dr", Namespace: "ns"}, Spec: dr}
	out := map[string]*clusterv3.Cluster{}
	for _, c := range cluster.BuildOutbound(svc, opts) {
		if err := c.ValidateAll(); err != nil {
			t.Fatalf("invalid cluster %s: %v", c.Name, err)
		}
		out[c.Name] = c
	}
	return out
}

func oneCluster(t *testing.T, svc *model.Service, tls *networking.ClientTLSSettings, opts cluster.Options) *clusterv3.Cluster {
	t.Helper()
	cs := tlsClusters(t, svc, &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{Tls: tls}}, opts)
	if len(cs) != 1 {
		t.Fatalf("%d clusters", len(cs))
	}
	for _, c := range cs {
		return c
	}
	return nil
}

// autoFlags are the cluster's auto_sni and auto_san_validation.
func autoFlags(t *testing.T, c *clusterv3.Cluster) (sni, san bool) {
	t.Helper()
	a := c.TypedExtensionProtocolOptions["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
	if a == nil {
		return false, false
	}
	o := &httpv3.HttpProtocolOptions{}
	if err := a.UnmarshalTo(o); err != nil {
		t.Fatal(err)
	}
	return o.GetUpstreamHttpProtocolOptions().GetAutoSni(), o.GetUpstreamHttpProtocolOptions().GetAutoSanValidation()
}

func alpnOverride(c *clusterv3.Cluster) string {
	return c.GetMetadata().GetFilterMetadata()["istio"].GetFields()["alpn_override"].GetStringValue()
}

func sanList(v *tlsv3.CertificateValidationContext) []string {
	var out []string
	for _, m := range v.GetMatchSubjectAltNames() {
		out = append(out, m.GetExact())
	}
	return out
}

func TestUserTLSFiles(t *testing.T) {
	simple := networking.ClientTLSSettings_SIMPLE
	cases := []struct {
		name             string
		tls              *networking.ClientTLSSettings
		root             string // "" when the validation context is plain
		sans             []string
		autoSNI, autoSAN bool
	}{
		{"no sni no sans: accounts, system CA, auto both", &networking.ClientTLSSettings{Mode: simple},
			"file-root:system", []string{"spiffe://example.com/api"}, true, true},
		{"sni and sans", &networking.ClientTLSSettings{Mode: simple, Sni: "api.example.com", SubjectAltNames: []string{"api.example.com"}},
			"file-root:system", []string{"api.example.com"}, false, false},
		{"sni only: no auto SAN", &networking.ClientTLSSettings{Mode: simple, Sni: "api.example.com"},
			"file-root:system", []string{"spiffe://example.com/api"}, false, false},
		{"sans only: auto SNI", &networking.ClientTLSSettings{Mode: simple, SubjectAltNames: []string{"x"}},
			"file-root:system", []string{"x"}, true, false},
		{"ca certificates", &networking.ClientTLSSettings{Mode: simple, CaCertificates: "/etc/ca.pem"},
			"file-root:/etc/ca.pem", []string{"spiffe://example.com/api"}, true, true},
		{"insecure skip verify", &networking.ClientTLSSettings{Mode: simple, InsecureSkipVerify: wrapperspb.Bool(true)},
			"", nil, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := oneCluster(t, externalService(protocol.TLS), tc.tls, cluster.Options{})
			ctx := upstreamTLS(t, c)
			if ctx == nil {
				t.Fatal("no TLS")
			}
			p := ctx.CommonTlsContext.GetTlsParams()
			if p.GetTlsMinimumProtocolVersion() != tlsv3.TlsParameters_TLSv1_2 || p.GetTlsMaximumProtocolVersion() != tlsv3.TlsParameters_TLSv1_3 {
				t.Errorf("tls params %v", p)
			}
			if ctx.Sni != tc.tls.Sni {
				t.Errorf("sni %q", ctx.Sni)
			}
			cv := ctx.CommonTlsContext.GetCombinedValidationContext()
			if tc.root == "" {
				if ctx.CommonTlsContext.GetValidationContext() == nil || cv != nil {
					t.Errorf("want an empty validation context, got %v", ctx.CommonTlsContext.ValidationContextType)
				}
			} else {
				sds := cv.GetValidationContextSdsSecretConfig()
				if sds.GetName() != tc.root || sds.GetSdsConfig().GetApiConfigSource().GetGrpcServices()[0].GetEnvoyGrpc().GetClusterName() != "sds-grpc" {
					t.Errorf("root %v", sds)
				}
				if sds.GetSdsConfig().GetInitialFetchTimeout() != nil {
					t.Error("file secrets carry no initial fetch timeout in Istio")
				}
				if got := sanList(cv.GetDefaultValidationContext()); len(got) != len(tc.sans) || len(got) > 0 && got[0] != tc.sans[0] {
					t.Errorf("sans %v, want %v", got, tc.sans)
				}
			}
			if sni, san := autoFlags(t, c); sni != tc.autoSNI || san != tc.autoSAN {
				t.Errorf("auto_sni %v auto_san_validation %v", sni, san)
			}
			if alpnOverride(c) != "false" {
				t.Error("no alpn_override")
			}
			if len(ctx.CommonTlsContext.AlpnProtocols) != 0 {
				t.Errorf("alpn %v on a TLS port", ctx.CommonTlsContext.AlpnProtocols)
			}
		})
	}
}

func TestUserTLSMutual(t *testing.T) {
	mutual := networking.ClientTLSSettings_MUTUAL
	t.Run("files, crl and the proxy's file SDS server", func(t *testing.T) {
		c := oneCluster(t, externalService(protocol.TLS), &networking.ClientTLSSettings{Mode: mutual,
			ClientCertificate: "/c.pem", PrivateKey: "/k.pem", CaCrl: "/crl.pem"}, cluster.Options{FileCredentialSocket: true})
		cc := upstreamTLS(t, c).GetCommonTlsContext()
		cert := cc.GetTlsCertificateSdsSecretConfigs()[0]
		if cert.Name != "file-cert:/c.pem~/k.pem" || cert.GetSdsConfig().GetApiConfigSource().GetGrpcServices()[0].GetEnvoyGrpc().GetClusterName() != "sds-files-grpc" {
			t.Errorf("cert %v", cert)
		}
		if cc.GetCombinedValidationContext().GetDefaultValidationContext().GetCrl().GetFilename() != "/crl.pem" {
			t.Error("no crl")
		}
	})
	t.Run("files without key: no TLS, auto SNI kept as in Istio", func(t *testing.T) {
		c := oneCluster(t, externalService(protocol.TLS), &networking.ClientTLSSettings{Mode: mutual, ClientCertificate: "/c.pem"}, cluster.Options{})
		if c.TransportSocket != nil {
			t.Error("TLS without a key")
		}
		if sni, _ := autoFlags(t, c); !sni {
			t.Error("no auto_sni")
		}
	})
	cred := &networking.ClientTLSSettings{Mode: mutual, CredentialName: "cred", Sni: "api.example.com"}
	t.Run("credential on a gateway: istiod's ADS", func(t *testing.T) {
		c := oneCluster(t, externalService(protocol.TLS), cred, cluster.Options{Router: true})
		cc := upstreamTLS(t, c).GetCommonTlsContext()
		cert := cc.GetTlsCertificateSdsSecretConfigs()[0]
		ca := cc.GetCombinedValidationContext().GetValidationContextSdsSecretConfig()
		if cert.Name != "kubernetes://cred" || ca.GetName() != "kubernetes://cred-cacert" {
			t.Errorf("names %q %q", cert.Name, ca.GetName())
		}
		if cert.GetSdsConfig().GetAds() == nil || ca.GetSdsConfig().GetAds() == nil || cert.GetSdsConfig().GetInitialFetchTimeout() != nil {
			t.Errorf("config %v", cert.GetSdsConfig())
		}
	})
	t.Run("credential on a sidecar: none without a selector", func(t *testing.T) {
		if c := oneCluster(t, externalService(protocol.TLS), cred, cluster.Options{}); c.TransportSocket != nil {
			t.Error("sidecar asks for a Secret")
		}
		dr := &networking.DestinationRule{TrafficPolicy: &networking.TrafficPolicy{Tls: cred},
			WorkloadSelector: &v1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "a"}}}
		for _, c := range tlsClusters(t, externalService(protocol.TLS), dr, cluster.Options{}) {
			if upstreamTLS(t, c).GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs()[0].GetName() != "kubernetes://cred" {
				t.Error("selected sidecar without the credential")
			}
		}
	})
	t.Run("sds:// credential", func(t *testing.T) {
		s := &networking.ClientTLSSettings{Mode: mutual, CredentialName: "sds://ext"}
		own := upstreamTLS(t, oneCluster(t, externalService(protocol.TLS), s, cluster.Options{Router: true, CredentialSocket: true}))
		cert := own.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs()[0]
		if cert.Name != "sds://ext" || cert.GetSdsConfig().GetApiConfigSource().GetGrpcServices()[0].GetEnvoyGrpc().GetClusterName() != "sds-external" {
			t.Errorf("own server %v", cert)
		}
		ads := upstreamTLS(t, oneCluster(t, externalService(protocol.TLS), s, cluster.Options{Router: true}))
		if n := ads.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs()[0].GetName(); n != "kubernetes://ext" {
			t.Errorf("fallback %q", n)
		}
	})
}

func TestUserTLSProtocolAndMesh(t *testing.T) {
	m := mesh.DefaultMeshConfig()
	m.TlsDefaults = &meshconfig.MeshConfig_TLSConfig{EcdhCurves: []string{"P-256"}, CipherSuites: []string{"ECDHE-ECDSA-AES128-GCM-SHA256"}}
	c := oneCluster(t, externalService(protocol.HTTP2), &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE}, cluster.Options{Mesh: m})
	cc := upstreamTLS(t, c).GetCommonTlsContext()
	if len(cc.AlpnProtocols) != 1 || cc.AlpnProtocols[0] != "h2" {
		t.Errorf("alpn %v", cc.AlpnProtocols)
	}
	if p := cc.GetTlsParams(); len(p.EcdhCurves) != 1 || p.EcdhCurves[0] != "P-256" || len(p.CipherSuites) != 1 {
		t.Errorf("params %v", p)
	}
	o := &httpv3.HttpProtocolOptions{}
	if err := c.TypedExtensionProtocolOptions["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].UnmarshalTo(o); err != nil {
		t.Fatal(err)
	}
	if o.GetExplicitHttpConfig().GetHttp2ProtocolOptions() == nil || !o.GetUpstreamHttpProtocolOptions().GetAutoSni() {
		t.Errorf("auto SNI lost the HTTP/2 options: %v", o)
	}
}

func TestUserTLSSubsets(t *testing.T) {
	svc := externalService(protocol.TLS)
	dr := &networking.DestinationRule{Subsets: []*networking.Subset{
		{Name: "tls", TrafficPolicy: &networking.TrafficPolicy{Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE}}},
		{Name: "plain"},
	}}
	cs := tlsClusters(t, svc, dr, cluster.Options{})
	main, sub, plain := cs["outbound|443||api.example.com"], cs["outbound|443|tls|api.example.com"], cs["outbound|443|plain|api.example.com"]
	if main.TransportSocket != nil || alpnOverride(main) != "" || plain.TransportSocket != nil || alpnOverride(plain) != "" {
		t.Error("TLS outside the subset")
	}
	if sub.TransportSocket == nil || alpnOverride(sub) != "false" {
		t.Error("subset without its TLS")
	}
}

// TestSNIDNATNoTLS: SNI-DNAT clusters pass the client's TLS through, so
// none of the rule's TLS (nor the HTTP options it asks for) reaches them.
func TestSNIDNATNoTLS(t *testing.T) {
	svc := service("a", "ns", 443, protocol.TLS, model.ClientSideLB)
	dr := &config.Config{Meta: config.Meta{GroupVersionKind: gvk.DestinationRule, Name: "dr", Namespace: "ns"},
		Spec: &networking.DestinationRule{Host: svc.Hostname, TrafficPolicy: &networking.TrafficPolicy{Tls: &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE}}}}
	for _, c := range cluster.BuildSNIDNAT(svc, cluster.Options{Mesh: mesh.DefaultMeshConfig(), DestinationRule: dr}) {
		if c.TransportSocket != nil || c.TypedExtensionProtocolOptions != nil {
			t.Errorf("%s: %v %v", c.Name, c.TransportSocket, c.TypedExtensionProtocolOptions)
		}
		if alpnOverride(c) != "false" {
			t.Errorf("%s: no alpn_override (Istio keeps it)", c.Name)
		}
	}
}
