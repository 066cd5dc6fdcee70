package telemetry

import (
	grpcstats "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_stats/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/meshplane/istiod/pkg/protoconv"
)

// MetadataExchangeName is the filter name Istio's proxies register the
// metadata exchange under, for network filters, upstream (cluster) filters
// and HTTP filters alike.
const MetadataExchangeName = "istio.metadata_exchange"

// PeerExchangeALPN is the ALPN value that marks an mTLS connection on which
// peers exchange their workload metadata.
const PeerExchangeALPN = "istio-peer-exchange"

// GRPCStatsName is the gRPC stats HTTP filter.
const GRPCStatsName = "envoy.filters.http.grpc_stats"

// typedStruct: see protoconv.TypedStruct.
var typedStruct = protoconv.TypedStruct

// MetadataExchange is the config of the TCP metadata exchange, used as a
// network filter on inbound chains and as an upstream filter on outbound
// clusters.
var MetadataExchange = typedStruct("type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange",
	map[string]any{"protocol": PeerExchangeALPN, "enable_discovery": true})

// Direction tells an HTTP filter which side of the proxy it serves.
type Direction int

const (
	// Outbound filters serve the proxy's own application's requests.
	Outbound Direction = iota
	// Inbound filters serve requests addressed to the proxy's workload.
	Inbound
)

// HTTPPeerMetadata is the HTTP metadata exchange: an outbound listener
// discovers and propagates to its upstream, an inbound one to its
// downstream.
func HTTPPeerMetadata(d Direction) *anypb.Any {
	if d == Inbound {
		return downstreamPeerMetadata()
	}
	return upstreamPeerMetadata()
}

func peerMetadata(side string) func() *anypb.Any {
	return typedStruct("type.googleapis.com/io.istio.http.peer_metadata.Config", map[string]any{
		side + "_discovery":   []any{map[string]any{"istio_headers": map[string]any{}}, map[string]any{"workload_discovery": map[string]any{}}},
		side + "_propagation": []any{map[string]any{"istio_headers": map[string]any{}}},
	})
}

var (
	upstreamPeerMetadata   = peerMetadata("upstream")
	downstreamPeerMetadata = peerMetadata("downstream")
)

// GRPCStats counts gRPC messages per call without per-method stats.
var GRPCStats = protoconv.Constant(func() proto.Message {
	return &grpcstats.FilterConfig{EmitFilterState: true,
		PerMethodStatSpecifier: &grpcstats.FilterConfig_StatsForAllMethods{StatsForAllMethods: wrapperspb.Bool(false)}}
})
