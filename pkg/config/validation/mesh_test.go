package validation_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config/validation"
)

func extAuthzHTTP(name, service string, port uint32) *meshconfig.MeshConfig_ExtensionProvider {
	return &meshconfig.MeshConfig_ExtensionProvider{
		Name: name,
		Provider: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExtAuthzHttp{
			EnvoyExtAuthzHttp: &meshconfig.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationHttpProvider{
				Service: service, Port: port,
			},
		},
	}
}

type secMeshCase struct {
	name     string
	mesh     *meshconfig.MeshConfig
	wantErr  []string
	wantWarn []string
}

func secRunMesh(t *testing.T, cases []secMeshCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			warn, err := validation.ValidateMeshConfig(c.mesh)
			secExpect(t, "error", err, c.wantErr)
			secExpect(t, "warning", warn, c.wantWarn)
		})
	}
}

func TestValidateMeshConfig(t *testing.T) {
	cases := []secMeshCase{
		{name: "empty", mesh: &meshconfig.MeshConfig{}},
		{name: "nil", mesh: nil},
		{name: "valid", mesh: &meshconfig.MeshConfig{
			ConnectTimeout:           durationpb.New(10 * time.Second),
			ProtocolDetectionTimeout: durationpb.New(0),
			IngressControllerMode:    meshconfig.MeshConfig_STRICT,
			IngressClass:             "istio",
			TrustDomain:              "cluster.local",
			TrustDomainAliases:       []string{"old.example.com."},
			DefaultConfig: &meshconfig.ProxyConfig{
				DrainDuration:    durationpb.New(45 * time.Second),
				DiscoveryAddress: "istiod.istio-system.svc:15012",
				ProxyAdminPort:   15000, StatusPort: 15020,
				Concurrency: wrapperspb.Int32(2),
			},
			ServiceSettings:               []*meshconfig.MeshConfig_ServiceSettings{{Hosts: []string{"*.cluster.local"}}},
			DefaultServiceExportTo:        []string{"*"},
			DefaultVirtualServiceExportTo: []string{".", "istio-system"},
			DiscoverySelectors: []*meshconfig.LabelSelector{{
				MatchLabels:      map[string]string{"env": "prod"},
				MatchExpressions: []*meshconfig.LabelSelectorRequirement{{Key: "team", Operator: "In", Values: []string{"a"}}},
			}},
			ExtensionProviders: []*meshconfig.MeshConfig_ExtensionProvider{
				extAuthzHTTP("authz", "ext-authz.foo.svc.cluster.local", 8000),
				{Name: "prom", Provider: &meshconfig.MeshConfig_ExtensionProvider_Prometheus{}},
			},
		}},
	}
	secRunMesh(t, cases)
}

func TestValidateMeshConfigExtensionProviders(t *testing.T) {
	cases := []secMeshCase{
		{name: "extension provider port 0 is only a warning", mesh: &meshconfig.MeshConfig{
			ExtensionProviders: []*meshconfig.MeshConfig_ExtensionProvider{extAuthzHTTP("my-authz", "authz.foo.svc.cluster.local", 0)},
		}, wantWarn: []string{
			"found invalid extension provider (can be ignored if the given extension provider is not used)",
			"invalid extension provider my-authz: port number 0 must be in the range 1..65535",
			"extensionProviders[0]",
		}},
		{name: "other provider problems warn", mesh: &meshconfig.MeshConfig{
			ExtensionProviders: []*meshconfig.MeshConfig_ExtensionProvider{
				{Name: "zipkin", Provider: &meshconfig.MeshConfig_ExtensionProvider_Zipkin{
					Zipkin: &meshconfig.MeshConfig_ExtensionProvider_ZipkinTracingProvider{Port: 9411},
				}},
				{Name: "none"},
			},
		}, wantWarn: []string{
			"invalid extension provider zipkin: service must not be empty",
			"invalid extension provider none: no provider type is set",
		}},
		{name: "duplicate provider names are errors", mesh: &meshconfig.MeshConfig{
			ExtensionProviders: []*meshconfig.MeshConfig_ExtensionProvider{
				extAuthzHTTP("dup", "a.example.com", 80), extAuthzHTTP("dup", "b.example.com", 80),
			},
		}, wantErr: []string{"extensionProviders[1].name: duplicate extension provider name dup"}},
	}
	secRunMesh(t, cases)
}

func TestValidateMeshConfigErrors(t *testing.T) {
	cases := []secMeshCase{
		{name: "errors", mesh: &meshconfig.MeshConfig{
			ConnectTimeout:           durationpb.New(-time.Second),
			ProtocolDetectionTimeout: durationpb.New(-time.Second),
			IngressControllerMode:    9,
			IngressClass:             "Bad_Class",
			TrustDomain:              "bad/domain",
			TrustDomainAliases:       []string{"", "ok.com", "-x.com"},
			DefaultConfig: &meshconfig.ProxyConfig{
				DrainDuration:    durationpb.New(0),
				DiscoveryAddress: "istiod-no-port",
				ProxyAdminPort:   70000,
				StatusPort:       -1,
				Concurrency:      wrapperspb.Int32(-1),
			},
			ServiceSettings:                []*meshconfig.MeshConfig_ServiceSettings{{Hosts: []string{"foo.*.com"}}},
			OutboundTrafficPolicy:          &meshconfig.MeshConfig_OutboundTrafficPolicy{Mode: 2},
			DefaultServiceExportTo:         []string{"*", "ns"},
			DefaultDestinationRuleExportTo: []string{"Bad_NS", "~"},
			DiscoverySelectors: []*meshconfig.LabelSelector{{
				MatchLabels:      map[string]string{"bad key!": "v"},
				MatchExpressions: []*meshconfig.LabelSelectorRequirement{{Key: "k", Operator: "Has"}, {Key: "k", Operator: "In"}},
			}, nil},
		}, wantErr: []string{
			"connectTimeout: invalid connect timeout",
			"protocolDetectionTimeout: invalid protocol detection timeout",
			"ingressControllerMode: unknown ingress controller mode 9",
			"ingressClass: invalid ingress class \"Bad_Class\"",
			"trustDomain: trust domain \"bad/domain\" invalid",
			"trustDomainAliases[0]: empty trust domain not allowed",
			"trustDomainAliases[2]: trust domain \"-x.com\" invalid",
			"defaultConfig.drainDuration: invalid drain duration",
			"defaultConfig.discoveryAddress: unable to split",
			"defaultConfig.proxyAdminPort: invalid proxy admin port: port number 70000",
			"defaultConfig.statusPort: invalid status port: port number -1",
			"defaultConfig.concurrency: concurrency must be greater than or equal to 0",
			"serviceSettings[0].hosts[0]:",
			"outboundTrafficPolicy.mode: unknown outbound traffic policy mode 2",
			"defaultServiceExportTo: cannot have both public (*) and non-public exportTo values",
			"defaultDestinationRuleExportTo[0]: invalid exportTo entry",
			"defaultDestinationRuleExportTo[1]: invalid exportTo entry",
			"discoverySelectors[0].matchLabels[bad key!]",
			"discoverySelectors[0].matchExpressions[0].operator: unknown operator \"Has\"",
			"discoverySelectors[0].matchExpressions[1].values: values must be non-empty when operator is In",
			"discoverySelectors[1]: label selector must not be null",
		}},
	}
	secRunMesh(t, cases)
}

func TestValidateMeshConfigDetails(t *testing.T) {
	cases := []secMeshCase{
		{name: "drain duration precision", mesh: &meshconfig.MeshConfig{
			DefaultConfig: &meshconfig.ProxyConfig{DrainDuration: durationpb.New(1500 * time.Millisecond)},
		}, wantErr: []string{"defaultConfig.drainDuration: drain time only supports durations to seconds precision"}},
		{name: "locality lb", mesh: &meshconfig.MeshConfig{
			LocalityLbSetting: &networking.LocalityLoadBalancerSetting{
				Distribute: []*networking.LocalityLoadBalancerSetting_Distribute{
					{From: "us-east/*", To: map[string]uint32{"us-east/z1": 60, "us-west/*": 30}},
				},
			},
		}, wantErr: []string{"localityLbSetting.distribute[0].to: total locality weight 90 != 100"}},
		{name: "locality failover", mesh: &meshconfig.MeshConfig{
			LocalityLbSetting: &networking.LocalityLoadBalancerSetting{
				Failover: []*networking.LocalityLoadBalancerSetting_Failover{{From: "us", To: "us"}, {From: "us/z", To: "eu"}},
			},
		}, wantErr: []string{
			"localityLbSetting.failover[0]: locality lb failover settings must specify different regions",
			"localityLbSetting.failover[1]: locality lb failover only specify region",
		}},
		{name: "tls defaults curves warn", mesh: &meshconfig.MeshConfig{
			TlsDefaults: &meshconfig.MeshConfig_TLSConfig{EcdhCurves: []string{"P-256", "bogus"}},
		}, wantWarn: []string{"tlsDefaults.ecdhCurves[1]: detected unrecognized ECDH curve \"bogus\""}},
	}
	secRunMesh(t, cases)
}

func TestValidateMeshNetworks(t *testing.T) {
	cases := []struct {
		name    string
		mn      *meshconfig.MeshNetworks
		wantErr []string
	}{
		{name: "nil", mn: nil},
		{name: "valid", mn: &meshconfig.MeshNetworks{Networks: map[string]*meshconfig.Network{
			"net1": {
				Endpoints: []*meshconfig.Network_NetworkEndpoints{
					{Ne: &meshconfig.Network_NetworkEndpoints_FromCidr{FromCidr: "10.0.0.0/16"}},
					{Ne: &meshconfig.Network_NetworkEndpoints_FromRegistry{FromRegistry: "cluster1"}},
				},
				Gateways: []*meshconfig.Network_IstioNetworkGateway{
					{Gw: &meshconfig.Network_IstioNetworkGateway_Address{Address: "1.2.3.4"}, Port: 15443},
					{Gw: &meshconfig.Network_IstioNetworkGateway_RegistryServiceName{
						RegistryServiceName: "istio-eastwestgateway.istio-system.svc.cluster.local",
					}, Port: 15443},
				},
			},
		}}},
		{name: "invalid", mn: &meshconfig.MeshNetworks{Networks: map[string]*meshconfig.Network{
			"net1": {
				Endpoints: []*meshconfig.Network_NetworkEndpoints{
					{}, {Ne: &meshconfig.Network_NetworkEndpoints_FromCidr{FromCidr: "10.0.0.0/99"}},
					{Ne: &meshconfig.Network_NetworkEndpoints_FromRegistry{FromRegistry: "Bad_Registry"}},
				},
				Gateways: []*meshconfig.Network_IstioNetworkGateway{
					{Port: 15443},
					{Gw: &meshconfig.Network_IstioNetworkGateway_Address{Address: "not valid!"}},
					nil,
				},
			},
			"net2": nil,
		}}, wantErr: []string{
			"networks[net1].endpoints[0]: endpoint must set exactly one of fromCidr or fromRegistry",
			"networks[net1].endpoints[1].fromCidr: 10.0.0.0/99 is not a valid CIDR block",
			"networks[net1].endpoints[2].fromRegistry: invalid registry name",
			"networks[net1].gateways[0]: gateway must set exactly one of address or registryServiceName",
			"networks[net1].gateways[1].address: \"not valid!\" is not a valid IP address or DNS name",
			"networks[net1].gateways[1].port: port number 0 must be in the range 1..65535",
			"networks[net1].gateways[2]: gateway must not be null",
			"networks[net2]: network must not be null",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			secExpect(t, "error", validation.ValidateMeshNetworks(c.mn), c.wantErr)
		})
	}
}

// With RESOLVE_HOSTNAME_GATEWAYS=false a gateway address must be an IP, as
// Istio's validation has it; with hostnames allowed the same one passes.
func TestValidateMeshNetworksWithoutHostnames(t *testing.T) {
	mn := &meshconfig.MeshNetworks{Networks: map[string]*meshconfig.Network{
		"net1": {Gateways: []*meshconfig.Network_IstioNetworkGateway{
			{Gw: &meshconfig.Network_IstioNetworkGateway_Address{Address: "1.2.3.4"}, Port: 15443},
			{Gw: &meshconfig.Network_IstioNetworkGateway_Address{Address: "gw.example.com"}, Port: 15443},
		}},
	}}
	secExpect(t, "error", validation.ValidateMeshNetworksWith(mn, true), nil)
	secExpect(t, "error", validation.ValidateMeshNetworksWith(mn, false), []string{
		"networks[net1].gateways[1].address: \"gw.example.com\" is not a valid IP address (hostname is allowed if RESOLVE_HOSTNAME_GATEWAYS is enabled)",
	})
}
