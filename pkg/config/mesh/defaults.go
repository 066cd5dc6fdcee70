package mesh

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
)

// Values shared with other packages that need Istio's built-in defaults.
const (
	DefaultTrustDomain      = "cluster.local"
	DefaultRootNamespace    = "istio-system"
	DefaultDiscoveryAddress = "istiod.istio-system.svc:15012"
	DefaultServiceCluster   = "istio-proxy"
	DefaultProxyConfigPath  = "./etc/istio/proxy"
	DefaultEnvoyBinaryPath  = "/usr/local/bin/envoy"
)

// DefaultProxyConfig returns the proxy defaults istiod puts in
// MeshConfig.defaultConfig before any user configuration is applied. Fields
// the injector or the agent fill in later (proxyMetadata, image, ...) are not
// part of it. Each call returns a new object the caller owns.
func DefaultProxyConfig() *meshconfig.ProxyConfig {
	return &meshconfig.ProxyConfig{
		ConfigPath:               DefaultProxyConfigPath,
		BinaryPath:               DefaultEnvoyBinaryPath,
		ClusterName:              &meshconfig.ProxyConfig_ServiceCluster{ServiceCluster: DefaultServiceCluster},
		DrainDuration:            durationpb.New(45 * time.Second),
		TerminationDrainDuration: durationpb.New(5 * time.Second),
		ProxyAdminPort:           15000,
		ControlPlaneAuthPolicy:   meshconfig.AuthenticationPolicy_MUTUAL_TLS,
		DiscoveryAddress:         DefaultDiscoveryAddress,
		StatNameLength:           189,
		StatusPort:               15020,
	}
}

// DefaultMeshConfig returns Istio 1.31's built-in mesh configuration, the
// base every source is applied on. Each call returns a new object the caller
// owns.
func DefaultMeshConfig() *meshconfig.MeshConfig {
	return &meshconfig.MeshConfig{
		EnableTracing:            true,
		AccessLogEncoding:        meshconfig.MeshConfig_TEXT,
		ProtocolDetectionTimeout: durationpb.New(0),
		IngressService:           "istio-ingressgateway",
		IngressControllerMode:    meshconfig.MeshConfig_STRICT,
		IngressClass:             "istio",
		TrustDomain:              DefaultTrustDomain,
		EnableAutoMtls:           wrapperspb.Bool(true),
		OutboundTrafficPolicy: &meshconfig.MeshConfig_OutboundTrafficPolicy{
			Mode: meshconfig.MeshConfig_OutboundTrafficPolicy_ALLOW_ANY,
		},
		InboundTrafficPolicy: &meshconfig.MeshConfig_InboundTrafficPolicy{
			Mode: meshconfig.MeshConfig_InboundTrafficPolicy_PASSTHROUGH,
		},
		LocalityLbSetting:              &networking.LocalityLoadBalancerSetting{Enabled: wrapperspb.Bool(true)},
		DefaultConfig:                  DefaultProxyConfig(),
		RootNamespace:                  DefaultRootNamespace,
		ProxyListenPort:                15001,
		ProxyInboundListenPort:         15006,
		ConnectTimeout:                 durationpb.New(10 * time.Second),
		DefaultServiceExportTo:         []string{"*"},
		DefaultVirtualServiceExportTo:  []string{"*"},
		DefaultDestinationRuleExportTo: []string{"*"},
		// Only used when a DNS lookup fails; successful answers use their TTL.
		DnsRefreshRate:        durationpb.New(60 * time.Second),
		EnablePrometheusMerge: wrapperspb.Bool(true),
		DefaultProviders:      &meshconfig.MeshConfig_DefaultProviders{},
		ExtensionProviders:    defaultExtensionProviders(),
	}
}

func defaultExtensionProviders() []*meshconfig.MeshConfig_ExtensionProvider {
	return []*meshconfig.MeshConfig_ExtensionProvider{
		{
			Name: "prometheus",
			Provider: &meshconfig.MeshConfig_ExtensionProvider_Prometheus{
				Prometheus: &meshconfig.MeshConfig_ExtensionProvider_PrometheusMetricsProvider{},
			},
		},
		{
			Name: "stackdriver",
			Provider: &meshconfig.MeshConfig_ExtensionProvider_Stackdriver{
				Stackdriver: &meshconfig.MeshConfig_ExtensionProvider_StackdriverProvider{},
			},
		},
		{
			Name: "envoy",
			Provider: &meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLog{
				EnvoyFileAccessLog: &meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLogProvider{
					Path: "/dev/stdout",
				},
			},
		},
	}
}

// DefaultMeshNetworks returns the default meshNetworks: no networks. Each
// call returns a new object the caller owns.
func DefaultMeshNetworks() *meshconfig.MeshNetworks {
	return &meshconfig.MeshNetworks{Networks: map[string]*meshconfig.Network{}}
}
