package inject

import (
	"sort"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1beta1"

	"github.com/meshplane/istiod/pkg/config/mesh"
)

// ProxyConfigResource is one ProxyConfig resource (networking.istio.io
// v1beta1) with the metadata its precedence depends on.
type ProxyConfigResource struct {
	Namespace string
	Name      string
	Created   time.Time
	Spec      *networking.ProxyConfig
}

// ProxyConfigs indexes ProxyConfig resources by namespace, oldest first (the
// first match wins, as in Istio). Immutable once built; nil is empty.
type ProxyConfigs struct {
	byNamespace map[string][]ProxyConfigResource
}

// NewProxyConfigs indexes resources (the slice is not kept).
func NewProxyConfigs(resources []ProxyConfigResource) *ProxyConfigs {
	sorted := append([]ProxyConfigResource(nil), resources...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if !sorted[i].Created.Equal(sorted[j].Created) {
			return sorted[i].Created.Before(sorted[j].Created)
		}
		if sorted[i].Name != sorted[j].Name {
			return sorted[i].Name < sorted[j].Name
		}
		return sorted[i].Namespace < sorted[j].Namespace
	})
	p := &ProxyConfigs{byNamespace: map[string][]ProxyConfigResource{}}
	for _, r := range sorted {
		if r.Spec != nil {
			p.byNamespace[r.Namespace] = append(p.byNamespace[r.Namespace], r)
		}
	}
	return p
}

// apply overlays the root namespace's resource without a selector, then the
// pod namespace's one.
func (p *ProxyConfigs) apply(pc *meshconfig.ProxyConfig, root, namespace string) *meshconfig.ProxyConfig {
	if p == nil {
		return pc
	}
	if root != "" {
		pc = mesh.OverlayProxyConfig(pc, p.namespaceWide(root))
	}
	if namespace != root {
		pc = mesh.OverlayProxyConfig(pc, p.namespaceWide(namespace))
	}
	return pc
}

func (p *ProxyConfigs) namespaceWide(ns string) *meshconfig.ProxyConfig {
	for _, r := range p.byNamespace[ns] {
		if r.Spec.GetSelector() == nil {
			return asMeshProxyConfig(r.Spec)
		}
	}
	return nil
}

// workload is the first resource of the namespace whose selector matches
// the labels (nil when none).
func (p *ProxyConfigs) workload(ns string, labels map[string]string) *meshconfig.ProxyConfig {
	if p == nil {
		return nil
	}
	for _, r := range p.byNamespace[ns] {
		sel := r.Spec.GetSelector().GetMatchLabels()
		if len(sel) == 0 {
			continue
		}
		match := true
		for k, v := range sel {
			if have, ok := labels[k]; !ok || have != v {
				match = false
				break
			}
		}
		if match {
			return asMeshProxyConfig(r.Spec)
		}
	}
	return nil
}

// asMeshProxyConfig: concurrency, environment variables (as proxyMetadata)
// and image are what a resource sets.
func asMeshProxyConfig(pc *networking.ProxyConfig) *meshconfig.ProxyConfig {
	out := &meshconfig.ProxyConfig{}
	if pc.Concurrency != nil {
		out.Concurrency = proto.Clone(pc.Concurrency).(*wrapperspb.Int32Value)
	}
	if pc.EnvironmentVariables != nil {
		out.ProxyMetadata = pc.EnvironmentVariables
	}
	if pc.Image != nil {
		out.Image = proto.Clone(pc.Image).(*networking.ProxyImage)
	}
	return out
}

// withoutDefaults drops the fields equal to the defaults, as Istio does
// before putting a ProxyConfig into PROXY_CONFIG (it keeps pods small).
func withoutDefaults(in *meshconfig.ProxyConfig) *meshconfig.ProxyConfig {
	pc := proto.Clone(in).(*meshconfig.ProxyConfig)
	d := mesh.DefaultProxyConfig()
	if pc.ConfigPath == d.ConfigPath {
		pc.ConfigPath = ""
	}
	if pc.BinaryPath == d.BinaryPath {
		pc.BinaryPath = ""
	}
	if pc.ControlPlaneAuthPolicy == d.ControlPlaneAuthPolicy {
		pc.ControlPlaneAuthPolicy = 0
	}
	if sc, ok := pc.GetClusterName().(*meshconfig.ProxyConfig_ServiceCluster); ok && sc.ServiceCluster == d.GetServiceCluster() {
		pc.ClusterName = nil
	}
	if proto.Equal(pc.DrainDuration, d.DrainDuration) {
		pc.DrainDuration = nil
	}
	if proto.Equal(pc.TerminationDrainDuration, d.TerminationDrainDuration) {
		pc.TerminationDrainDuration = nil
	}
	if pc.DiscoveryAddress == d.DiscoveryAddress {
		pc.DiscoveryAddress = ""
	}
	if proto.Equal(pc.EnvoyMetricsService, d.EnvoyMetricsService) {
		pc.EnvoyMetricsService = nil
	}
	if proto.Equal(pc.EnvoyAccessLogService, d.EnvoyAccessLogService) {
		pc.EnvoyAccessLogService = nil
	}
	if proto.Equal(pc.Tracing, d.Tracing) {
		pc.Tracing = nil
	}
	if pc.ProxyAdminPort == d.ProxyAdminPort {
		pc.ProxyAdminPort = 0
	}
	if pc.StatNameLength == d.StatNameLength {
		pc.StatNameLength = 0
	}
	if pc.StatusPort == d.StatusPort {
		pc.StatusPort = 0
	}
	if proto.Equal(pc.Concurrency, d.Concurrency) {
		pc.Concurrency = nil
	}
	if len(pc.ProxyMetadata) == 0 {
		pc.ProxyMetadata = nil
	}
	return pc
}
