package cluster

import (
	"net"
	"sort"
	"strconv"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	dfpclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dynamic_forward_proxy/v3"
	dfpcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/dynamic_forward_proxy/v3"
	caresv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/network/dns_resolver/cares/v3"
	"google.golang.org/protobuf/types/known/structpb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// Names of the ALLOW_ANY_DYNAMIC_DNS outbound policy, as Istio spells them.
const (
	// AllowAnyDynamicDNS is the dynamic forward proxy cluster that takes
	// plain HTTP to unknown hosts and resolves the Host header itself.
	AllowAnyDynamicDNS = "AllowAnyDynamicDNSCluster"
	// AllowAnyDNSCacheName is the DNS cache the cluster and the HTTP
	// filters share: Envoy keeps one cache per name, so they must agree.
	AllowAnyDNSCacheName = "allow_any_dfp_dns_cache"
	// allowAnyDNSMaxHosts is PILOT_ALLOW_ANY_DYNAMIC_DNS_MAX_HOSTS's
	// default, which Istio writes out even though it is Envoy's too.
	allowAnyDNSMaxHosts = 1024
	// dfpClusterType is the custom cluster type of dynamic forward proxies.
	dfpClusterType = "envoy.clusters.dynamic_forward_proxy"
)

// DNSLookupFamily is the family DNS-resolving clusters and caches of a
// proxy use (see Options.dnsLookupFamily).
func DNSLookupFamily(mode model.IPMode, dualStack, ipv4ForIPv6 bool) clusterv3.Cluster_DnsLookupFamily {
	return Options{IPMode: mode, DualStack: dualStack, IPv4ForIPv6: ipv4ForIPv6}.dnsLookupFamily()
}

// DNSCapture is how the proxy's agent resolves names, as its metadata
// says: Capture is DNS_CAPTURE and ProxyAddr DNS_PROXY_ADDR (host:port).
type DNSCapture struct {
	Capture   bool
	ProxyAddr string
}

// AllowAnyDNSCache is the DNS cache of ALLOW_ANY_DYNAMIC_DNS. With DNS
// capture it asks the agent's DNS proxy (so ServiceEntry and Kubernetes
// names resolve as the application would see them); without it Envoy's
// default resolver.
func AllowAnyDNSCache(family clusterv3.Cluster_DnsLookupFamily, dns DNSCapture) *dfpcommonv3.DnsCacheConfig {
	cfg := &dfpcommonv3.DnsCacheConfig{Name: AllowAnyDNSCacheName, DnsLookupFamily: family, MaxHosts: u32(allowAnyDNSMaxHosts)}
	if !dns.Capture {
		return cfg
	}
	host, portStr, err := net.SplitHostPort(dns.ProxyAddr)
	if err != nil {
		// the agent's default address, as Istio falls back to
		host, portStr = "127.0.0.1", "15053"
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	port, err := strconv.ParseUint(portStr, 10, 32)
	if err != nil {
		port = 15053
	}
	cfg.TypedDnsResolverConfig = &core.TypedExtensionConfig{Name: "envoy.network.dns_resolver.cares",
		TypedConfig: protoconv.MessageToAny(&caresv3.CaresDnsResolverConfig{Resolvers: []*core.Address{{
			Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{Address: host,
				PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(port)}}}}}})}
	return cfg
}

// BuildAllowAnyDynamicDNS is the cluster unknown plain-HTTP destinations go
// to under ALLOW_ANY_DYNAMIC_DNS: a dynamic forward proxy on the shared
// cache, otherwise shaped like PassthroughCluster (its protocol options,
// unlimited circuit breakers, metadata exchange). Without TLS origination
// (the mesh's outboundTrafficPolicy.tls) it must allow the insecure
// options Envoy otherwise refuses on a forward proxy.
// With TLS origination the cluster names and verifies each resolved host
// (setAutoSNI, shared with every cluster); the HTTP options that asks for replace the passthrough
// ones, as in Istio, where they are the cluster's only tracked options.
func BuildAllowAnyDynamicDNS(m *meshconfig.MeshConfig, cache *dfpcommonv3.DnsCacheConfig) *clusterv3.Cluster {
	tls := m.GetOutboundTrafficPolicy().GetTls()
	insecure := tls == nil || tls.GetMode() == networking.ClientTLSSettings_DISABLE
	c := &clusterv3.Cluster{Name: AllowAnyDynamicDNS, AltStatName: AllowAnyDynamicDNS + ";",
		ConnectTimeout: m.GetConnectTimeout(), LbPolicy: clusterv3.Cluster_CLUSTER_PROVIDED,
		ClusterDiscoveryType: &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{
			Name: dfpClusterType,
			TypedConfig: protoconv.MessageToAny(&dfpclusterv3.ClusterConfig{
				ClusterImplementationSpecifier: &dfpclusterv3.ClusterConfig_DnsCacheConfig{DnsCacheConfig: cache},
				AllowInsecureClusterOptions:    insecure,
			}),
		}},
		CircuitBreakers:               unlimited(),
		TypedExtensionProtocolOptions: downstreamProtocol(),
		Filters:                       metadataExchange(),
	}
	if !insecure {
		// only sidecars have this cluster, and no rule selects them
		applyTLS(c, tls, tlsTarget{sans: tls.GetSubjectAltNames(), dfp: true, freshHTTP: true, sidecar: true, mesh: m})
	}
	return c
}

// IsDynamicDNS tells a DYNAMIC_DNS ServiceEntry with a wildcard host, which
// Envoy's dynamic forward proxy serves: the proxy resolves the name the
// client asked for (Host header, or TLS server name) itself.
func IsDynamicDNS(svc *model.Service) bool {
	return svc.Resolution == model.DynamicDNS && strings.HasPrefix(svc.Hostname, "*")
}

// DNSCacheName is the DNS cache of a DYNAMIC_DNS service, shared by its
// clusters and the filters in front of them.
func DNSCacheName(host string) string { return host + "_dfp_dns_cache" }

// buildDynamicDNS builds the clusters of a DYNAMIC_DNS wildcard service:
// one dynamic forward proxy per HTTP, HTTP2, gRPC or TLS port (Envoy's
// forward proxy needs a host name from the request, which other protocols
// do not carry), under the rule's policy for the port; subsets are not
// built, as a forward proxy has no endpoints to pick from.
func buildDynamicDNS(svc *model.Service, dr *networking.DestinationRule, opts Options) []*clusterv3.Cluster {
	var out []*clusterv3.Cluster
	for _, port := range svc.Ports {
		switch port.Protocol {
		case protocol.HTTP, protocol.HTTP2, protocol.GRPC, protocol.TLS:
		default:
			continue
		}
		out = append(out, buildOneDynamicDNS(svc, port, MergeTrafficPolicy(dr.GetTrafficPolicy(), nil, port.Port), opts))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// buildOneDynamicDNS is buildOne for a forward proxy port: the custom
// cluster type on the service's DNS cache and CLUSTER_PROVIDED balancing
// (no common LB settings), the pool, outlier detection and TLS of the
// policy, and, as in Istio, metadata without the services list.
func buildOneDynamicDNS(svc *model.Service, port *model.Port, pol *networking.TrafficPolicy, opts Options) *clusterv3.Cluster {
	pol = withMeshDefaults(opts.Mesh, pol)
	name := SubsetKey(Outbound, "", svc.Hostname, port.Port)
	c := &clusterv3.Cluster{Name: name, AltStatName: name + ";", LbPolicy: clusterv3.Cluster_CLUSTER_PROVIDED,
		ClusterDiscoveryType: &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{
			Name: dfpClusterType,
			TypedConfig: protoconv.MessageToAny(&dfpclusterv3.ClusterConfig{
				ClusterImplementationSpecifier: &dfpclusterv3.ClusterConfig_DnsCacheConfig{DnsCacheConfig: &dfpcommonv3.DnsCacheConfig{
					Name: DNSCacheName(svc.Hostname), DnsLookupFamily: opts.dnsLookupFamily()}},
			}),
		}}}
	applyTrafficProtocol(c, pol, port.Protocol, opts.Mesh, true, !opts.Router)
	applyOutlierDetection(c, pol.GetOutlierDetection())
	// no SNI of the cluster's own: the forward proxy sends the host's
	t := opts.tlsTarget(svc, "", port.Protocol.IsHTTP2())
	t.dfp = true
	applyTLS(c, pol.GetTls(), t)
	fields := map[string]*structpb.Value{}
	if opts.DestinationRule != nil {
		dr := opts.DestinationRule
		fields["config"] = stringValue("/apis/" + dr.GroupVersionKind.GroupVersion() + "/namespaces/" + dr.Namespace + "/destination-rule/" + dr.Name)
	}
	if svc.MeshExternal {
		fields["external"] = structpb.NewBoolValue(true)
	}
	if len(fields) > 0 {
		c.Metadata = &core.Metadata{FilterMetadata: map[string]*structpb.Struct{"istio": {Fields: fields}}}
	}
	if opts.DestinationRule != nil {
		c.Metadata = addALPNOverride(c.Metadata, pol.GetTls().GetMode())
	}
	c.Filters = metadataExchange()
	return c
}
