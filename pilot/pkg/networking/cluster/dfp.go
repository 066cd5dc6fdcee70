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
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/structpb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/protoconv"
	"github.com/meshplane/istiod/pkg/config/protocol"
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
// (dynamicDNSTLS); the HTTP options that asks for replace the passthrough
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
		applyTLS(c, tls, "", false, false, tls.GetSubjectAltNames())
		if tls.GetSni() == "" || !tls.GetInsecureSkipVerify().GetValue() {
			c.TypedExtensionProtocolOptions = nil
		}
		dynamicDNSTLS(c, tls)
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
	autoMTLS := opts.Mesh.GetEnableAutoMtls().GetValue() && !svc.MeshExternal && !opts.PeerDisabled
	// no SNI of the cluster's own: the forward proxy sends the host's
	applyTLS(c, pol.GetTls(), "", autoMTLS, port.Protocol.IsHTTP2(), sans(svc.ServiceAccounts, opts.ServiceAccounts))
	switch tls := pol.GetTls(); {
	case tls != nil && tls.GetMode() != networking.ClientTLSSettings_DISABLE:
		dynamicDNSTLS(c, tls)
	case tls == nil && autoMTLS:
		// auto mTLS is Istio mTLS without a server name of its own
		dynamicDNSTLS(c, &networking.ClientTLSSettings{Mode: networking.ClientTLSSettings_ISTIO_MUTUAL})
	}
	fields := map[string]*structpb.Value{}
	if opts.DestinationRule != nil {
		dr := opts.DestinationRule
		fields["config"] = stringValue("/apis/" + dr.GroupVersionKind.GroupVersion() + "/namespaces/" + dr.Namespace + "/destination-rule/" + dr.Name)
		if m := pol.GetTls().GetMode(); m == networking.ClientTLSSettings_SIMPLE || m == networking.ClientTLSSettings_MUTUAL {
			// the rule's own TLS: the ALPN filter must leave the
			// application's protocols alone
			fields["alpn_override"] = stringValue("false")
		}
	}
	if svc.MeshExternal {
		fields["external"] = structpb.NewBoolValue(true)
	}
	if len(fields) > 0 {
		c.Metadata = &core.Metadata{FilterMetadata: map[string]*structpb.Struct{"istio": {Fields: fields}}}
	}
	c.Filters = metadataExchange()
	return c
}

// dynamicDNSTLS makes a forward proxy's TLS origination name and verify
// the host each request resolved, as Istio does: auto_sni unless the
// settings fix a server name, auto_san_validation unless they skip
// verification; Envoy refuses a forward proxy without both unless its
// insecure options are allowed, so then they are.
func dynamicDNSTLS(c *clusterv3.Cluster, tls *networking.ClientTLSSettings) {
	insecure := tls.GetInsecureSkipVerify().GetValue()
	autoSNI, autoSAN := tls.GetSni() == "", !insecure
	if insecure || !autoSNI || !autoSAN {
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
	const key = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
	h := httpOptions{}
	if a := c.TypedExtensionProtocolOptions[key]; a != nil {
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
