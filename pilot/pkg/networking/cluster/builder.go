package cluster

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	caresv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/network/dns_resolver/cares/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/endpoint"
	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// Options are the inputs of the outbound clusters of one service.
type Options struct {
	Mesh *meshconfig.MeshConfig
	// DestinationRule is the rule that applies to the service for the proxy
	// (already merged and chosen by the push context), or nil. Its spec is a
	// *networking.DestinationRule.
	DestinationRule *config.Config
	// Endpoints returns the endpoints of a service port, for clusters whose
	// endpoints are inline (DNS resolution); may be nil.
	Endpoints func(port *model.Port) []*model.IstioEndpoint
	// ServiceAccounts are the identities of the service's endpoints (SPIFFE
	// URIs); Istio mTLS to the service accepts these and the service's own.
	ServiceAccounts []string
	// PeerDisabled: the destination's mesh- or namespace-wide
	// PeerAuthentication is DISABLE, so auto mTLS sends plain text (a
	// workload-level DISABLE is not inferred, as in Istio).
	PeerDisabled bool
	// Router: the clusters are a gateway's, which do not follow the
	// downstream's HTTP version on ports without a declared protocol (a
	// sidecar's do, as in Istio).
	Router bool
	// IPMode is the proxy's IP mode, and DualStack and IPv4ForIPv6 the
	// ISTIO_DUAL_STACK and ISTIO_ENABLE_IPV4_OUTBOUND_LISTENER_FOR_IPV6_CLUSTERS
	// flags: together they pick the address family DNS clusters resolve.
	IPMode      model.IPMode
	DualStack   bool
	IPv4ForIPv6 bool
	// RedisMaglev is PILOT_ENABLE_REDIS_FILTER: Redis ports' clusters
	// balance by MAGLEV, for the Redis proxy's client-side sharding.
	RedisMaglev bool
	// CredentialSocket and FileCredentialSocket are the proxy's
	// "credential" and "file-credential" node metadata ("true"): it runs
	// an SDS server of its own for sds:// credentials, and for the
	// certificate files of SIMPLE and MUTUAL rules (sds-files-grpc).
	CredentialSocket, FileCredentialSocket bool
	// View is what the proxy sees of the endpoints DNS clusters carry
	// (ViewFor; the zero value: every endpoint as it is).
	View EndpointView

	// sniDNAT: the clusters are BuildSNIDNAT's, which get no TLS.
	sniDNAT bool
}

// tlsTarget is the TLS view of a cluster of svc.
func (o Options) tlsTarget(svc *model.Service, sni string, http2 bool) tlsTarget {
	var selector bool
	if o.DestinationRule != nil {
		dr, _ := o.DestinationRule.Spec.(*networking.DestinationRule)
		selector = dr.GetWorkloadSelector() != nil
	}
	return tlsTarget{sni: sni, http2: http2,
		autoMTLS: o.Mesh.GetEnableAutoMtls().GetValue() && !svc.MeshExternal && !o.PeerDisabled,
		sans:     sans(svc.ServiceAccounts, o.ServiceAccounts), external: svc.Attributes.ServiceRegistry == model.External,
		sidecar: !o.Router, drSelector: selector, mesh: o.Mesh,
		credentialSocket: o.CredentialSocket, fileCredentialSocket: o.FileCredentialSocket}
}

// dnsLookupFamily is the family a DNS cluster resolves, as Istio picks it
// from the proxy's addresses: IPv4 only, IPv6 only for an IPv6-only proxy
// (both under IPv4ForIPv6, for an IPv4 path the proxy cannot see), and for
// a dual-stack proxy both (happy eyeballs) only under DualStack.
func (o Options) dnsLookupFamily() clusterv3.Cluster_DnsLookupFamily {
	switch {
	case o.IPMode == model.IPv6 && o.IPv4ForIPv6, o.IPMode == model.Dual && o.DualStack:
		return clusterv3.Cluster_ALL
	case o.IPMode == model.IPv6:
		return clusterv3.Cluster_V6_ONLY
	}
	return clusterv3.Cluster_V4_ONLY
}

// BuildOutbound builds the clusters of a service: one per port, plus one per
// port and destination rule subset. UDP ports get none. Sorted by name.
func BuildOutbound(svc *model.Service, opts Options) []*clusterv3.Cluster {
	var out []*clusterv3.Cluster
	var dr *networking.DestinationRule
	if opts.DestinationRule != nil {
		dr, _ = opts.DestinationRule.Spec.(*networking.DestinationRule)
	}
	if IsDynamicDNS(svc) {
		return buildDynamicDNS(svc, dr, opts)
	}
	for _, port := range svc.Ports {
		if port.Protocol == protocol.UDP {
			continue
		}
		// a DNS cluster the proxy sees no endpoint of is not built, nor
		// are its subsets (inline.go)
		def := buildOne(svc, port, "", nil, MergeTrafficPolicy(dr.GetTrafficPolicy(), nil, port.Port), opts)
		if def == nil {
			continue
		}
		out = append(out, def)
		for _, ss := range dr.GetSubsets() {
			pol := MergeTrafficPolicy(dr.GetTrafficPolicy(), ss.TrafficPolicy, port.Port)
			if c := buildOne(svc, port, ss.Name, ss.GetLabels(), pol, opts); c != nil {
				out = append(out, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// allIstioMutual tells whether auto mTLS may apply to a passthrough
// service's port: it has endpoints and each takes Istio mTLS (Istio's
// BestEffortInferServiceMTLSMode disables it otherwise).
func allIstioMutual(opts Options, port *model.Port) bool {
	if opts.Endpoints == nil {
		return false
	}
	eps := opts.Endpoints(port)
	if len(eps) == 0 {
		return false
	}
	for _, ep := range eps {
		if ep.TLSMode == model.DisabledTLSModeLabel || ep.TLSMode == "" {
			return false
		}
	}
	return true
}

func meshConnectTimeout(m *meshconfig.MeshConfig) *durationpb.Duration {
	if m.GetConnectTimeout() != nil {
		return m.GetConnectTimeout()
	}
	return durationpb.New(10 * time.Second)
}

// buildOne builds one cluster; nil for a DNS cluster whose endpoints the
// proxy sees none of.
func buildOne(svc *model.Service, port *model.Port, subset string, subsetLabels map[string]string, pol *networking.TrafficPolicy, opts Options) *clusterv3.Cluster {
	pol = withMeshDefaults(opts.Mesh, pol)
	name := SubsetKey(Outbound, subset, svc.Hostname, port.Port)
	c := &clusterv3.Cluster{Name: name, AltStatName: name + ";"}
	// a gateway cannot forward to the original destination: its cluster of
	// a passthrough (headless) service is an EDS one (Istio's
	// convertResolution)
	passthrough := svc.Resolution == model.Passthrough && !opts.Router
	switch {
	case svc.Resolution == model.DNSLB || svc.Resolution == model.DNSRoundRobinLB:
		t := clusterv3.Cluster_STRICT_DNS
		if svc.Resolution == model.DNSRoundRobinLB {
			t = clusterv3.Cluster_LOGICAL_DNS
		}
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: t}
		la, ok := inlineEndpoints(name, svc, port, subsetLabels, opts)
		if !ok {
			return nil
		}
		c.LoadAssignment = la
		c.DnsRefreshRate = opts.Mesh.GetDnsRefreshRate()
		if c.DnsRefreshRate == nil {
			c.DnsRefreshRate = durationpb.New(60 * time.Second)
		}
		c.RespectDnsTtl = true
		c.DnsLookupFamily = opts.dnsLookupFamily()
		c.DnsJitter = durationpb.New(100 * time.Millisecond)
		c.TypedDnsResolverConfig = caresResolver()
	case passthrough:
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST}
	default:
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS}
		c.EdsClusterConfig = &clusterv3.Cluster_EdsClusterConfig{ServiceName: name, EdsConfig: adsConfigSource()}
	}
	applyTrafficProtocol(c, pol, port.Protocol, opts.Mesh, true, !opts.Router)
	// the panic threshold and locality weighting apply to ORIGINAL_DST
	// clusters too: Istio's applyLoadBalancer sets them before it returns
	// for that type
	c.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{HealthyPanicThreshold: &typev3.Percent{}}
	if len(LocalitySetting(pol, opts.Mesh).GetDistribute()) > 0 {
		// locality weights come with the endpoints
		c.CommonLbConfig.LocalityConfigSpecifier = &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig_{
			LocalityWeightedLbConfig: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig{}}
	}
	if passthrough {
		c.LbPolicy = clusterv3.Cluster_CLUSTER_PROVIDED
	} else if !redisMaglev(c, port, opts.RedisMaglev) {
		applyLoadBalancer(c, pol.GetLoadBalancer())
	}
	applyOutlierDetection(c, pol.GetOutlierDetection())
	if !opts.sniDNAT {
		t := opts.tlsTarget(svc, SNI(subset, svc.Hostname, port.Port), port.Protocol.IsHTTP2())
		if svc.Resolution == model.Passthrough {
			// which endpoint takes the connection is not known: auto
			// mTLS only when every endpoint takes Istio mTLS
			t.originalDst = passthrough
			t.autoMTLS = t.autoMTLS && allIstioMutual(opts, port)
		}
		applyTLS(c, pol.GetTls(), t)
	}
	c.Metadata = serviceMetadata(svc, subset, opts.DestinationRule)
	if opts.DestinationRule != nil {
		c.Metadata = addALPNOverride(c.Metadata, pol.GetTls().GetMode())
	}
	c.Filters = metadataExchange()
	return c
}

// LocalitySetting is the locality load-balancing setting of a policy: the
// destination rule's, else the mesh's.
func LocalitySetting(pol *networking.TrafficPolicy, m *meshconfig.MeshConfig) *networking.LocalityLoadBalancerSetting {
	if s := pol.GetLoadBalancer().GetLocalityLbSetting(); s != nil {
		return s
	}
	return m.GetLocalityLbSetting()
}

func adsConfigSource() *core.ConfigSource {
	return &core.ConfigSource{
		ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
		InitialFetchTimeout:   durationpb.New(0),
		ResourceApiVersion:    core.ApiVersion_V3,
	}
}

// inlineEndpoints lists DNS endpoints in the cluster (DNS clusters carry
// their hosts; Envoy resolves them); a subset's cluster only those with
// the subset's labels, as Istio's buildSubsetCluster; under the proxy's
// view (inline.go): false when it sees none of them.
func inlineEndpoints(name string, svc *model.Service, port *model.Port, subsetLabels map[string]string, opts Options) (*endpointv3.ClusterLoadAssignment, bool) {
	var eps []*model.IstioEndpoint
	if opts.Endpoints != nil {
		eps = opts.Endpoints(port)
	}
	if len(subsetLabels) > 0 && len(eps) > 0 {
		var in []*model.IstioEndpoint
		for _, ep := range eps {
			if labelsMatch(ep.Labels, subsetLabels) {
				in = append(in, ep)
			}
		}
		if len(in) == 0 {
			return endpoint.Build(name, nil, endpoint.Options{}), true
		}
		eps = in
	}
	la, ok := buildInline(name, eps, opts)
	if !ok {
		return nil, false
	}
	if len(la.Endpoints) == 0 && svc.Resolution == model.DNSLB {
		// a DNS ServiceEntry without endpoints resolves its host
		la = endpoint.Build(name, []*model.IstioEndpoint{{Addresses: []string{svc.Hostname}, EndpointPort: uint32(port.Port),
			Namespace: svc.Attributes.Namespace}}, endpoint.Options{})
	}
	return la, true
}

// labelsMatch: have holds every label of want.
func labelsMatch(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// serviceMetadata is the istio filter metadata naming the cluster's service.
func serviceMetadata(svc *model.Service, subset string, dr *config.Config) *core.Metadata {
	fields := map[string]*structpb.Value{"services": structpb.NewListValue(&structpb.ListValue{
		Values: []*structpb.Value{serviceEntry(svc)}})}
	if dr != nil {
		// the rule that shaped the cluster, as Istio names it
		fields["config"] = stringValue("/apis/" + dr.GroupVersionKind.GroupVersion() + "/namespaces/" + dr.Namespace + "/destination-rule/" + dr.Name)
	}
	if subset != "" {
		fields["subset"] = stringValue(subset)
	}
	// Istio marks the service's own cluster only (applyDestinationRule),
	// not its subsets'
	if svc.MeshExternal && subset == "" {
		fields["external"] = structpb.NewBoolValue(true)
	}
	return &core.Metadata{FilterMetadata: map[string]*structpb.Struct{"istio": {Fields: fields}}}
}

// serviceEntry is one element of the "services" metadata list.
func serviceEntry(svc *model.Service) *structpb.Value {
	return structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
		"host":      stringValue(svc.Hostname),
		"name":      stringValue(svc.Attributes.Name),
		"namespace": stringValue(svc.Attributes.Namespace),
	}})
}

// stringValue is a metadata string that always marshals: the metadata is
// built field by field instead of through structpb.NewStruct, which fails
// (and would leave the metadata empty) on invalid UTF-8. Such bytes, which
// validation should have kept out of names, become U+FFFD.
func stringValue(s string) *structpb.Value {
	return structpb.NewStringValue(strings.ToValidUTF8(s, "\uFFFD"))
}

func unlimited() *clusterv3.CircuitBreakers {
	return &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
		MaxConnections: u32(math.MaxUint32), MaxPendingRequests: u32(math.MaxUint32),
		MaxRequests: u32(math.MaxUint32), MaxRetries: u32(math.MaxUint32),
	}}}
}

// BuildBlackHole is the cluster that drops traffic (REGISTRY_ONLY).
func BuildBlackHole(m *meshconfig.MeshConfig) *clusterv3.Cluster {
	return &clusterv3.Cluster{Name: BlackHole, AltStatName: BlackHole + ";", ConnectTimeout: meshConnectTimeout(m),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
}

func originalDst(name, statName string, m *meshconfig.MeshConfig) *clusterv3.Cluster {
	return &clusterv3.Cluster{Name: name, AltStatName: statName + ";", ConnectTimeout: meshConnectTimeout(m),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST},
		LbPolicy:             clusterv3.Cluster_CLUSTER_PROVIDED, CircuitBreakers: unlimited()}
}

// BuildPassthrough forwards to the original destination (ALLOW_ANY).
func BuildPassthrough(m *meshconfig.MeshConfig) *clusterv3.Cluster {
	c := originalDst(Passthrough, Passthrough, m)
	c.TypedExtensionProtocolOptions = downstreamProtocol()
	c.Filters = metadataExchange()
	if meshPoolSettings(m) {
		// Istio applies the mesh's pool to it but drops the HTTP options
		// that pool implies (they go to a wrapper it never builds): only
		// limits, timeout and keepalive take effect
		applyConnectionPool(c, m.GetDefaultTrafficPolicy().GetConnectionPool(), nil, m, &httpOptions{})
	}
	return c
}

// inboundBind makes inbound connections come from 127.0.0.6 so the
// iptables rules let them reach the application.
func inboundBind() *core.BindConfig {
	return &core.BindConfig{SourceAddress: bindAddress(inboundBindIPv4)}
}

// The "magic" source addresses of connections to the application, one per
// IP family (6 as in 15006), that the iptables rules let through.
const (
	inboundBindIPv4 = "127.0.0.6"
	inboundBindIPv6 = "::6"
)

func bindAddress(ip string) *core.SocketAddress {
	return &core.SocketAddress{Address: ip, PortSpecifier: &core.SocketAddress_PortValue{PortValue: 0}}
}

// ApplyInboundPassthroughFamily sets the source addresses of
// InboundPassthroughClusterIpv4 by the proxy's IP mode, as Istio does
// whatever ISTIO_DUAL_STACK says: 127.0.0.6, ::6 for an IPv6-only proxy,
// and for a dual-stack one 127.0.0.6 with ::6 as the extra address Envoy
// picks for IPv6 destinations (a socket cannot bind to one family and
// connect to the other).
func ApplyInboundPassthroughFamily(c *clusterv3.Cluster, mode model.IPMode) {
	src := inboundBindIPv4
	if mode == model.IPv6 {
		src = inboundBindIPv6
	}
	c.UpstreamBindConfig = &core.BindConfig{SourceAddress: bindAddress(src)}
	if mode == model.Dual {
		c.UpstreamBindConfig.ExtraSourceAddresses = []*core.ExtraSourceAddress{{Address: bindAddress(inboundBindIPv6)}}
	}
}

// ApplyInboundFamily sets the source address of an inbound cluster that has
// one (see ApplyInboundEndpoint) by the proxy's IP mode, as Istio's
// passThroughBindIPs: ::6 for an IPv6-only proxy, 127.0.0.6 otherwise, and
// ::6 as an extra address for a dual-stack proxy only under dualStack
// (ISTIO_DUAL_STACK).
func ApplyInboundFamily(c *clusterv3.Cluster, mode model.IPMode, dualStack bool) {
	if c.UpstreamBindConfig == nil {
		return
	}
	switch {
	case mode == model.IPv6:
		c.UpstreamBindConfig = &core.BindConfig{SourceAddress: bindAddress(inboundBindIPv6)}
	case mode == model.Dual && dualStack:
		c.UpstreamBindConfig = &core.BindConfig{SourceAddress: bindAddress(inboundBindIPv4),
			ExtraSourceAddresses: []*core.ExtraSourceAddress{{Address: bindAddress(inboundBindIPv6)}}}
	}
}

// BuildInboundPassthrough forwards inbound traffic for ports no service declares.
func BuildInboundPassthrough(m *meshconfig.MeshConfig) *clusterv3.Cluster {
	c := originalDst(InboundPassthrough, Passthrough, m)
	c.UpstreamBindConfig = inboundBind()
	c.TypedExtensionProtocolOptions = downstreamProtocol()
	if meshPoolSettings(m) {
		// Istio builds it from the outbound passthrough cluster
		// (buildInboundPassthroughCluster), the mesh's pool included
		applyConnectionPool(c, m.GetDefaultTrafficPolicy().GetConnectionPool(), nil, m, &httpOptions{})
	}
	return c
}

// BuildInbound is the cluster of one of the proxy's own ports, shared by the
// services that target it; an HTTP/2 (gRPC) port speaks HTTP/2 to the
// application.
func BuildInbound(port int, proto protocol.Instance, services []*model.Service, m *meshconfig.MeshConfig) *clusterv3.Cluster {
	name := SubsetKey(Inbound, "", "", port)
	c := originalDst(name, name, m)
	c.CleanupInterval = &durationpb.Duration{Seconds: 9223372035} // Istio's "never"
	c.UpstreamBindConfig = inboundBind()
	c.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{}
	var entries []*structpb.Value
	for _, s := range services {
		entries = append(entries, serviceEntry(s))
	}
	// no telemetry metadata behind a placeholder (a Sidecar ingress port no
	// service targets: MeshExternal, as Istio's addTelemetryMetadata skips)
	if len(entries) > 0 && !services[0].MeshExternal {
		c.Metadata = &core.Metadata{FilterMetadata: map[string]*structpb.Struct{"istio": {Fields: map[string]*structpb.Value{
			"services": structpb.NewListValue(&structpb.ListValue{Values: entries})}}}}
	}
	// the port's protocol, as Istio's buildCluster sets it for inbound
	// clusters too: HTTP/2 ports speak HTTP/2, ports without a declared
	// protocol the downstream's
	var h httpOptions
	if proto.IsHTTP2() {
		h.setH2()
	} else if proto == protocol.Unsupported {
		h.useDownstream()
	}
	h.finish(c)
	return c
}

func exactSAN(s string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: s}}
}

// metadataExchange is the upstream filter that exchanges workload metadata
// with the peer over mTLS (Istio's telemetry needs it on every outbound
// cluster).
func metadataExchange() []*clusterv3.Filter {
	return []*clusterv3.Filter{{Name: telemetry.MetadataExchangeName, TypedConfig: telemetry.MetadataExchange()}}
}

// caresResolver is the DNS resolver of DNS clusters, with Istio's limit on
// concurrent UDP queries.
func caresResolver() *core.TypedExtensionConfig {
	return &core.TypedExtensionConfig{Name: "envoy.network.dns_resolver.cares",
		TypedConfig: protoconv.MessageToAny(&caresv3.CaresDnsResolverConfig{UdpMaxQueries: u32(100)})}
}

// downstreamProtocol makes a passthrough cluster speak whatever HTTP version
// the downstream spoke, with Istio's idle timeout.
func downstreamProtocol() map[string]*anypb.Any {
	return map[string]*anypb.Any{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": protoconv.MessageToAny(&httpv3.HttpProtocolOptions{
		CommonHttpProtocolOptions: &core.HttpProtocolOptions{IdleTimeout: durationpb.New(300 * time.Second)},
		UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_UseDownstreamProtocolConfig{UseDownstreamProtocolConfig: &httpv3.HttpProtocolOptions_UseDownstreamHttpConfig{
			HttpProtocolOptions: &core.Http1ProtocolOptions{}, Http2ProtocolOptions: &core.Http2ProtocolOptions{}}},
	})}
}

// sans merges the service's declared accounts with its endpoints',
// sorted and without duplicates.
func sans(declared, endpoints []string) []string {
	if len(endpoints) == 0 {
		return declared
	}
	out := append(slices.Clone(declared), endpoints...)
	slices.Sort(out)
	return slices.Compact(out)
}

// BuildSNIDNAT builds the SNI-DNAT clusters an AUTO_PASSTHROUGH gateway
// forwards to: the service's outbound clusters (and subsets) named by
// their mTLS SNI, outbound_.<port>_.<subset>_.<host>, without a transport
// socket (the client's mTLS passes through to the destination) and with
// the mTLS endpoints only.
func BuildSNIDNAT(svc *model.Service, opts Options) []*clusterv3.Cluster {
	if svc.MeshExternal {
		return nil
	}
	// no TLS of the service's own, as Istio skips it for these clusters
	opts.sniDNAT = true
	out := BuildOutbound(svc, opts)
	for _, c := range out {
		_, subset, host, port, _ := ParseSubsetKey(c.Name)
		c.Name = SNI(subset, host, port)
		c.AltStatName = c.Name + ";"
		if c.EdsClusterConfig != nil {
			c.EdsClusterConfig.ServiceName = c.Name
		}
		if c.LoadAssignment != nil {
			c.LoadAssignment.ClusterName = c.Name
			// the mTLS endpoints only, as in EDS
			endpoint.KeepMTLS(c.LoadAssignment)
		}
		c.TransportSocket, c.TransportSocketMatches = nil, nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ApplyInboundPolicy applies the connection pool of the DestinationRule of
// the service behind an inbound cluster (at its service port), and names
// the rule in the metadata, as Istio does: limits set for clients also
// bound what the server side accepts.
func ApplyInboundPolicy(c *clusterv3.Cluster, dr *config.Config, servicePort int, proto protocol.Instance, m *meshconfig.MeshConfig) {
	var spec *networking.DestinationRule
	if dr != nil {
		spec, _ = dr.Spec.(*networking.DestinationRule)
	}
	if spec.GetTrafficPolicy() == nil {
		// no rule, or one without a traffic policy (subsets only): the
		// mesh's pool settings still apply, and the rule is not named, as
		// in Istio
		if meshPoolSettings(m) {
			applyTrafficProtocol(c, withMeshDefaults(m, nil), proto, m, false, true)
		}
		return
	}
	pol := withMeshDefaults(m, MergeTrafficPolicy(spec.GetTrafficPolicy(), nil, servicePort))
	applyTrafficProtocol(c, pol, proto, m, false, true)
	if c.Metadata == nil {
		c.Metadata = &core.Metadata{FilterMetadata: map[string]*structpb.Struct{}}
	}
	md := c.Metadata.FilterMetadata["istio"]
	if md == nil {
		md = &structpb.Struct{Fields: map[string]*structpb.Value{}}
		c.Metadata.FilterMetadata["istio"] = md
	}
	md.Fields["config"] = stringValue("/apis/" + dr.GroupVersionKind.GroupVersion() + "/namespaces/" + dr.Namespace + "/destination-rule/" + dr.Name)
}

// ApplyInboundEndpoint sends an inbound cluster to a fixed endpoint (a
// Sidecar ingress listener's defaultEndpoint): a STATIC cluster with that
// one address, an IP and port or a unix:// path; the "magic" source
// address is kept only for endpoints that iptables would capture
// (anything but loopback).
func ApplyInboundEndpoint(c *clusterv3.Cluster, address string, port int) {
	var addr *core.Address
	if path, ok := strings.CutPrefix(address, "unix://"); ok {
		addr = &core.Address{Address: &core.Address_Pipe{Pipe: &core.Pipe{Path: path}}}
	} else {
		addr = &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
			Address: address, PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(port)}}}}
	}
	c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
	c.LbPolicy = clusterv3.Cluster_ROUND_ROBIN
	c.CleanupInterval = nil
	c.LoadAssignment = &endpointv3.ClusterLoadAssignment{ClusterName: c.Name, Endpoints: []*endpointv3.LocalityLbEndpoints{{
		LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: addr}}}}}}}
	if address == "127.0.0.1" || address == "::1" || strings.HasPrefix(address, "unix://") {
		c.UpstreamBindConfig = nil
	}
}

// ApplyInboundConnectionPool replaces an inbound cluster's connection pool
// with the Sidecar's (inboundConnectionPool, or the ingress listener's),
// which wins over the DestinationRule's.
func ApplyInboundConnectionPool(c *clusterv3.Cluster, cp *networking.ConnectionPoolSettings, proto protocol.Instance, m *meshconfig.MeshConfig) {
	if cp == nil {
		return
	}
	applyTrafficProtocol(c, &networking.TrafficPolicy{ConnectionPool: cp}, proto, m, false, true)
}
