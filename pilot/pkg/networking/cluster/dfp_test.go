package cluster_test

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	dfpclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dynamic_forward_proxy/v3"
	caresv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/network/dns_resolver/cares/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/mesh"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// The shared cache asks the agent's DNS proxy only when the proxy captures
// DNS, at DNS_PROXY_ADDR with localhost made an IP, else at Istio's
// default address.
func TestAllowAnyDNSCacheResolver(t *testing.T) {
	for _, tc := range []struct {
		name string
		dns  cluster.DNSCapture
		want string // "" for no resolver
		port uint32
	}{
		{"no capture", cluster.DNSCapture{ProxyAddr: "127.0.0.1:53"}, "", 0},
		{"capture, localhost", cluster.DNSCapture{Capture: true, ProxyAddr: "localhost:15054"}, "127.0.0.1", 15054},
		{"capture, IPv6", cluster.DNSCapture{Capture: true, ProxyAddr: "[::1]:15053"}, "::1", 15053},
		{"capture, no address", cluster.DNSCapture{Capture: true}, "127.0.0.1", 15053},
		{"capture, bad port", cluster.DNSCapture{Capture: true, ProxyAddr: "10.0.0.1:x"}, "10.0.0.1", 15053},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster.AllowAnyDNSCache(clusterv3.Cluster_V6_ONLY, tc.dns)
			if c.GetName() != "allow_any_dfp_dns_cache" || c.GetMaxHosts().GetValue() != 1024 || c.GetDnsLookupFamily() != clusterv3.Cluster_V6_ONLY {
				t.Fatalf("cache = %v", c)
			}
			r := c.GetTypedDnsResolverConfig()
			if tc.want == "" {
				if r != nil {
					t.Fatalf("resolver = %v, want none", r)
				}
				return
			}
			var cares caresv3.CaresDnsResolverConfig
			if err := r.GetTypedConfig().UnmarshalTo(&cares); err != nil {
				t.Fatal(err)
			}
			sa := cares.GetResolvers()[0].GetSocketAddress()
			if sa.GetAddress() != tc.want || sa.GetPortValue() != tc.port {
				t.Fatalf("resolver = %v, want %s:%d", sa, tc.want, tc.port)
			}
		})
	}
}

func dfpConfig(t *testing.T, c *clusterv3.Cluster) *dfpclusterv3.ClusterConfig {
	t.Helper()
	if c.GetClusterType().GetName() != "envoy.clusters.dynamic_forward_proxy" || c.GetLbPolicy() != clusterv3.Cluster_CLUSTER_PROVIDED {
		t.Fatalf("%s is not a dynamic forward proxy: %v", c.Name, c)
	}
	var cfg dfpclusterv3.ClusterConfig
	if err := c.GetClusterType().GetTypedConfig().UnmarshalTo(&cfg); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

// Only TLS origination drops the forward proxy's insecure options.
func TestAllowAnyDynamicDNSInsecureOptions(t *testing.T) {
	for _, tc := range []struct {
		tls  *networking.ClientTLSSettings
		want bool
	}{
		{nil, true},
		{&networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_DISABLE}, true},
		{&networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE}, false},
	} {
		m := mesh.DefaultMeshConfig()
		m.OutboundTrafficPolicy = &meshconfig.MeshConfig_OutboundTrafficPolicy{Mode: meshconfig.MeshConfig_OutboundTrafficPolicy_ALLOW_ANY_DYNAMIC_DNS, Tls: tc.tls}
		c := cluster.BuildAllowAnyDynamicDNS(m, cluster.AllowAnyDNSCache(clusterv3.Cluster_V4_ONLY, cluster.DNSCapture{}))
		if c.Name != "AllowAnyDynamicDNSCluster" {
			t.Fatalf("name %s", c.Name)
		}
		if got := dfpConfig(t, c).GetAllowInsecureClusterOptions(); got != tc.want {
			t.Errorf("tls %v: allow insecure %v, want %v", tc.tls, got, tc.want)
		}
		o := httpProtocolOptions(t, c)
		if originates := c.TransportSocket != nil; originates == tc.want {
			t.Errorf("tls %v: transport socket %v", tc.tls, c.TransportSocket)
		}
		// TLS origination: the resolved host named and verified, in place
		// of the passthrough's downstream protocol
		if tc.want != (o.GetUseDownstreamProtocolConfig() != nil) || tc.want == o.GetUpstreamHttpProtocolOptions().GetAutoSni() {
			t.Errorf("tls %v: HTTP options %v", tc.tls, o)
		}
		if err := c.ValidateAll(); err != nil {
			t.Error(err)
		}
	}
}

func wildcardService(res model.Resolution) *model.Service {
	return &model.Service{Hostname: "*.example.com", Resolution: res, MeshExternal: true,
		Ports: model.PortList{
			{Name: "http", Port: 80, Protocol: protocol.HTTP}, {Name: "tls", Port: 443, Protocol: protocol.TLS},
			{Name: "grpc", Port: 9090, Protocol: protocol.GRPC}, {Name: "tcp", Port: 9000, Protocol: protocol.TCP},
			{Name: "udp", Port: 53, Protocol: protocol.UDP}, {Name: "https", Port: 8443, Protocol: protocol.HTTPS},
		},
		Attributes: model.ServiceAttributes{Name: "*.example.com", Namespace: "app", ServiceRegistry: model.External}}
}

// A DYNAMIC_DNS wildcard gets a forward proxy for its HTTP, HTTP2, gRPC and
// TLS ports only, without subsets; a NONE wildcard keeps its clusters.
func TestBuildOutboundDynamicDNS(t *testing.T) {
	dr := &config.Config{Meta: config.Meta{Name: "wild", Namespace: "app"}, Spec: &networking.DestinationRule{
		Host: "*.example.com", Subsets: []*networking.Subset{{Name: "v1"}}}}
	out := cluster.BuildOutbound(wildcardService(model.DynamicDNS), cluster.Options{Mesh: mesh.DefaultMeshConfig(), DestinationRule: dr})
	var names []string
	for _, c := range out {
		names = append(names, c.Name)
		cfg := dfpConfig(t, c)
		if got := cfg.GetDnsCacheConfig().GetName(); got != "*.example.com_dfp_dns_cache" {
			t.Errorf("%s: cache %s", c.Name, got)
		}
		if c.CommonLbConfig != nil || c.Metadata.GetFilterMetadata()["istio"].GetFields()["services"] != nil {
			t.Errorf("%s: common LB config or services metadata: %v", c.Name, c)
		}
	}
	want := []string{"outbound|443||*.example.com", "outbound|80||*.example.com", "outbound|9090||*.example.com"}
	if len(names) != len(want) {
		t.Fatalf("clusters %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("clusters %v, want %v", names, want)
		}
	}
	if n := len(cluster.BuildOutbound(wildcardService(model.Passthrough), cluster.Options{Mesh: mesh.DefaultMeshConfig()})); n != 5 {
		t.Errorf("passthrough wildcard: %d clusters, want 5 (all but UDP)", n)
	}
}

func httpProtocolOptions(t *testing.T, c *clusterv3.Cluster) *httpv3.HttpProtocolOptions {
	t.Helper()
	var o httpv3.HttpProtocolOptions
	a := c.TypedExtensionProtocolOptions["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
	if a == nil {
		return nil
	}
	if err := a.UnmarshalTo(&o); err != nil {
		t.Fatal(err)
	}
	return &o
}

// TLS origination names and verifies the resolved host unless the rule
// fixes a server name or skips verification, which then needs the
// forward proxy's insecure options.
func TestDynamicDNSTLS(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		tls                       *networking.ClientTLSSettings
		autoSNI, autoSAN, allowed bool
	}{
		{"simple", &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE}, true, true, false},
		{"simple with sni", &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE, Sni: "a.example.com"}, false, true, true},
		{"insecure", &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_SIMPLE, InsecureSkipVerify: wrapperspb.Bool(true)}, true, false, true},
		{"istio mutual", &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL}, true, true, false},
		{"disable", &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_DISABLE}, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dr := &config.Config{Meta: config.Meta{Name: "wild", Namespace: "app"}, Spec: &networking.DestinationRule{
				Host: "*.example.com", TrafficPolicy: &networking.TrafficPolicy{Tls: tc.tls}}}
			svc := wildcardService(model.DynamicDNS)
			svc.Ports = svc.Ports[:1]
			c := cluster.BuildOutbound(svc, cluster.Options{Mesh: mesh.DefaultMeshConfig(), DestinationRule: dr})[0]
			u := httpProtocolOptions(t, c).GetUpstreamHttpProtocolOptions()
			if u.GetAutoSni() != tc.autoSNI || u.GetAutoSanValidation() != tc.autoSAN {
				t.Errorf("auto_sni %v auto_san_validation %v, want %v %v", u.GetAutoSni(), u.GetAutoSanValidation(), tc.autoSNI, tc.autoSAN)
			}
			if got := dfpConfig(t, c).GetAllowInsecureClusterOptions(); got != tc.allowed {
				t.Errorf("allow insecure %v, want %v", got, tc.allowed)
			}
			if err := c.ValidateAll(); err != nil {
				t.Error(err)
			}
		})
	}
}
