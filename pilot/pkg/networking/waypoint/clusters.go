package waypoint

import (
	"math"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	internalupstream "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/internal_upstream/v3"
	rawbuffer "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/type/metadata/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// Names of the waypoint's fixed resources, as Istio names them.
const (
	ConnectTerminate = "connect_terminate"
	MainInternal     = "main_internal"
	ConnectOriginate = "connect_originate"
	Encap            = "encap"
	// InboundVIP is the direction of the clusters and chains of the
	// services that use the waypoint.
	InboundVIP cluster.Direction = "inbound-vip"

	// HBONEPort is where the waypoint terminates HBONE and where it sends
	// HBONE to.
	HBONEPort = 15008
	// originalDstKey is the metadata namespace the original destination
	// of a tunnelled endpoint is kept in.
	originalDstKey = "envoy.filters.listener.original_dst"
	httpOptionsKey = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
)

// ClusterName is the inbound-vip cluster (and filter chain) of a service
// port: subset "http" or "tcp".
func ClusterName(subset, host string, port int) string {
	return cluster.SubsetKey(InboundVIP, subset, host, port)
}

// Clusters are the waypoint's clusters: main_internal, encap, one
// inbound-vip cluster per port (and protocol, and DestinationRule subset)
// of each service, and connect_originate.
func Clusters(svcs []Service, o Options) []*clusterv3.Cluster {
	out := []*clusterv3.Cluster{internalCluster(MainInternal, MainInternal), internalCluster(Encap, ConnectOriginate)}
	for _, s := range svcs {
		for _, p := range s.Service.Ports {
			for _, side := range subsetsOf(p.Protocol) {
				for _, ss := range ruleSubsets(s.DestinationRule) {
					c := inboundVIPCluster(s.Service, p, side, ss, o)
					if isDNS(s.Service) {
						applyDNS(c, s, p, ss, o)
					}
					applyDestinationRule(c, s.Service, p, side, ss, s.DestinationRule, o)
					out = append(out, c)
				}
			}
		}
	}
	return append(out, connectOriginateCluster(o))
}

// subsetsOf are the inbound-vip clusters of a port's protocol: tcp, http,
// or both when the protocol is sniffed; none for UDP.
func subsetsOf(p protocol.Instance) []string {
	switch {
	case p == protocol.UDP:
		return nil
	case p.IsUnsupported():
		return []string{"tcp", "http"}
	case p.IsHTTP():
		return []string{"http"}
	}
	return []string{"tcp"}
}

func u32(v uint32) *wrapperspb.UInt32Value { return wrapperspb.UInt32(v) }

func unlimited() *clusterv3.CircuitBreakers {
	return &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
		MaxConnections: u32(math.MaxUint32), MaxPendingRequests: u32(math.MaxUint32),
		MaxRequests: u32(math.MaxUint32), MaxRetries: u32(math.MaxUint32),
	}}}
}

var (
	rawBufferSocket = &core.TransportSocket{Name: "raw_buffer",
		ConfigType: &core.TransportSocket_TypedConfig{TypedConfig: protoconv.MessageToAny(&rawbuffer.RawBuffer{})}}
	// downstreamProtocolOptions passes HTTP/1 and HTTP/2 through as they
	// came (the internal clusters).
	downstreamProtocolOptions = protoconv.Constant(func() proto.Message {
		return &httpv3.HttpProtocolOptions{
			CommonHttpProtocolOptions: &core.HttpProtocolOptions{IdleTimeout: durationpb.New(300 * time.Second)},
			UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_UseDownstreamProtocolConfig{
				UseDownstreamProtocolConfig: &httpv3.HttpProtocolOptions_UseDownstreamHttpConfig{
					HttpProtocolOptions: &core.Http1ProtocolOptions{}, Http2ProtocolOptions: &core.Http2ProtocolOptions{}}},
		}
	})
)

// internalUpstream wraps a socket in the internal upstream transport,
// passing the given host metadata namespaces to the internal listener.
func internalUpstream(inner *core.TransportSocket, passthrough ...string) *core.TransportSocket {
	t := &internalupstream.InternalUpstreamTransport{TransportSocket: inner}
	for _, n := range passthrough {
		t.PassthroughMetadata = append(t.PassthroughMetadata, &internalupstream.InternalUpstreamTransport_MetadataValueSource{
			Kind: &metadatav3.MetadataKind{Kind: &metadatav3.MetadataKind_Host_{Host: &metadatav3.MetadataKind_Host{}}},
			Name: n})
	}
	return &core.TransportSocket{Name: "internal_upstream",
		ConfigType: &core.TransportSocket_TypedConfig{TypedConfig: protoconv.MessageToAny(t)}}
}

// internalAddress addresses an internal listener (id: the endpoint's own
// identifier, "" for none).
func internalAddress(listener, id string) *core.Address {
	return &core.Address{Address: &core.Address_EnvoyInternalAddress{EnvoyInternalAddress: &core.EnvoyInternalAddress{
		AddressNameSpecifier: &core.EnvoyInternalAddress_ServerListenerName{ServerListenerName: listener}, EndpointId: id}}}
}

// internalCluster is a static cluster to an internal listener.
func internalCluster(name, listener string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		AltStatName:          name + ";",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		CircuitBreakers:      unlimited(),
		LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{
				Endpoint: &endpointv3.Endpoint{Address: internalAddress(listener, "")}}}}}}},
		TypedExtensionProtocolOptions: map[string]*anypb.Any{httpOptionsKey: downstreamProtocolOptions()},
		TransportSocket:               internalUpstream(rawBufferSocket),
	}
}

// inboundVIPCluster is the EDS cluster of a service port: endpoints are
// internal addresses of connect_originate, which tunnels to each.
func inboundVIPCluster(svc *model.Service, p *model.Port, side, ruleSubset string, o Options) *clusterv3.Cluster {
	subset := side
	if ruleSubset != "" {
		subset += "/" + ruleSubset
	}
	name := ClusterName(subset, svc.Hostname, p.Port)
	c := &clusterv3.Cluster{
		Name:                 name,
		AltStatName:          name + ";",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{ServiceName: name, EdsConfig: &core.ConfigSource{
			ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
			InitialFetchTimeout:   durationpb.New(0), ResourceApiVersion: core.ApiVersion_V3}},
		ConnectTimeout:  connectTimeout(o),
		LbPolicy:        clusterv3.Cluster_LEAST_REQUEST,
		CircuitBreakers: unlimited(),
		CommonLbConfig:  &clusterv3.Cluster_CommonLbConfig{HealthyPanicThreshold: &typev3.Percent{}},
		TransportSocket: internalUpstream(rawBufferSocket, originalDstKey, "istio"),
		Metadata:        serviceMetadata(svc, subset),
	}
	if side == "http" && p.Protocol.IsHTTP2() {
		c.TypedExtensionProtocolOptions = map[string]*anypb.Any{httpOptionsKey: protoconv.MessageToAny(&httpv3.HttpProtocolOptions{
			UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &core.Http2ProtocolOptions{}}}}})}
	}
	return c
}

func connectTimeout(o Options) *durationpb.Duration {
	if t := o.Mesh.GetConnectTimeout(); t != nil {
		return durationpb.New(t.AsDuration())
	}
	return durationpb.New(10 * time.Second)
}

// serviceMetadata tells telemetry which service a cluster serves.
func serviceMetadata(svc *model.Service, subset string) *core.Metadata {
	entry := structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
		"host":      structpb.NewStringValue(svc.Hostname),
		"name":      structpb.NewStringValue(svc.Attributes.Name),
		"namespace": structpb.NewStringValue(svc.Attributes.Namespace),
	}})
	return &core.Metadata{FilterMetadata: map[string]*structpb.Struct{"istio": {Fields: map[string]*structpb.Value{
		"services": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{entry}}),
		"subset":   structpb.NewStringValue(subset),
	}}}}
}

// connectOriginateCluster tunnels to the original destination's HBONE
// port (or the waypoint the endpoint metadata names) over mTLS, accepting
// only the identities of the waypoint's trust domains and namespace.
func connectOriginateCluster(o Options) *clusterv3.Cluster {
	ctx := connectTLSContext(o)
	vc := ctx.GetCombinedValidationContext().GetDefaultValidationContext()
	vc.MatchTypedSubjectAltNames = append(vc.MatchTypedSubjectAltNames, uriPrefix("spiffe://"+o.trustDomain()+"/ns/"+o.Namespace+"/sa/"))
	idle := durationpb.New(time.Hour)
	if t := o.Mesh.GetHboneIdleTimeout(); t != nil {
		idle = durationpb.New(t.AsDuration())
	}
	return &clusterv3.Cluster{
		Name:                 ConnectOriginate,
		AltStatName:          ConnectOriginate + ";",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST},
		ConnectTimeout:       connectTimeout(o),
		LbPolicy:             clusterv3.Cluster_CLUSTER_PROVIDED,
		CircuitBreakers:      unlimited(),
		TypedExtensionProtocolOptions: map[string]*anypb.Any{httpOptionsKey: protoconv.MessageToAny(&httpv3.HttpProtocolOptions{
			CommonHttpProtocolOptions: &core.HttpProtocolOptions{IdleTimeout: idle},
			UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{
					Http2ProtocolOptions: &core.Http2ProtocolOptions{AllowConnect: true}}}},
		})},
		CleanupInterval: durationpb.New(60 * time.Second),
		LbConfig: &clusterv3.Cluster_OriginalDstLbConfig_{OriginalDstLbConfig: &clusterv3.Cluster_OriginalDstLbConfig{
			UpstreamPortOverride: u32(HBONEPort),
			MetadataKey: &metadatav3.MetadataKey{Key: originalDstKey, Path: []*metadatav3.MetadataKey_PathSegment{{
				Segment: &metadatav3.MetadataKey_PathSegment_Key{Key: "waypoint"}}}},
		}},
		TransportSocket: &core.TransportSocket{Name: "tls", ConfigType: &core.TransportSocket_TypedConfig{
			TypedConfig: protoconv.MessageToAny(&tlsv3.UpstreamTlsContext{CommonTlsContext: ctx})}},
	}
}

func uriPrefix(p string) *tlsv3.SubjectAltNameMatcher {
	return &tlsv3.SubjectAltNameMatcher{SanType: tlsv3.SubjectAltNameMatcher_URI,
		Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: p}}}
}
