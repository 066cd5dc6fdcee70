package listener_test

import (
	"testing"
	"time"

	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

func TestResolveConnectionSettings(t *testing.T) {
	edge := &meshconfig.ProxyConfig_ConnectionSettings{Profile: meshconfig.ProxyConfig_ConnectionSettings_EDGE, HttpIdleTimeout: durationpb.New(time.Minute)}
	mesh := &meshconfig.ProxyConfig{ConnectionSettings: &meshconfig.ProxyConfig_ConnectionSettings{HttpDrainTimeout: durationpb.New(time.Second)}}
	own := &meshconfig.ProxyConfig{ConnectionSettings: edge}
	before := proto.Clone(edge)

	if got := listener.ResolveConnectionSettings(nil, mesh, false); !proto.Equal(got, mesh.ConnectionSettings) {
		t.Errorf("no proxy config: %v, want the mesh's", got)
	}
	if got := listener.ResolveConnectionSettings(&meshconfig.ProxyConfig{}, mesh, false); !proto.Equal(got, mesh.ConnectionSettings) {
		t.Errorf("a proxy config without settings: %v, want the mesh's", got)
	}
	if got := listener.ResolveConnectionSettings(own, mesh, false); got != edge {
		t.Errorf("sidecar with EDGE: %v, want its own settings without defaults", got)
	}
	got := listener.ResolveConnectionSettings(own, mesh, true)
	if got.GetHttpIdleTimeout().AsDuration() != time.Minute || got.GetHttpDrainTimeout() != nil ||
		got.GetListenerPerConnectionBufferLimitBytes().GetValue() != 32768 || got.GetHttpStreamIdleTimeout().AsDuration() != 5*time.Minute ||
		got.GetHttpRequestTimeout().AsDuration() != 5*time.Minute || got.GetHttpRequestHeadersTimeout().AsDuration() != time.Minute ||
		got.GetHttpMaxConcurrentStreams().GetValue() != 100 || got.GetHttp2InitialStreamWindowSize().GetValue() != 65536 ||
		got.GetHttp2InitialConnectionWindowSize().GetValue() != 1048576 || !got.GetHttpMergeSlashes().GetValue() ||
		got.GetHttpHeadersWithUnderscoresAction() != meshconfig.ProxyConfig_ConnectionSettings_HEADERS_WITH_UNDERSCORES_REJECT_REQUEST ||
		got.GetHttpPathWithEscapedSlashesAction() != meshconfig.ProxyConfig_ConnectionSettings_UNESCAPE_AND_REDIRECT {
		t.Errorf("router with EDGE: %v", got)
	}
	if !proto.Equal(edge, before) {
		t.Error("edge defaults were written into the shared settings")
	}
	if listener.ResolveConnectionSettings(nil, nil, true) != nil {
		t.Error("no settings anywhere: want nil")
	}
}

// TestConnectionSettingsOnHCM: connectionSettings reach the inbound HTTP
// connection managers, a gRPC port's HTTP/2 options included, and
// negative sizes are dropped.
func TestConnectionSettingsOnHCM(t *testing.T) {
	cs := &meshconfig.ProxyConfig_ConnectionSettings{HttpStreamIdleTimeout: durationpb.New(time.Second),
		HttpMaxConcurrentStreams: wrapperspb.Int32(-1), Http2InitialStreamWindowSize: wrapperspb.Int32(70000),
		HttpPathWithEscapedSlashesAction: meshconfig.ProxyConfig_ConnectionSettings_REJECT_REQUEST}
	o := listener.Options{ConnectionSettings: cs, Inbound: []listener.InboundTarget{{Port: 9090, Protocol: protocol.GRPC, ServicePort: 9090}}}
	vi := listener.BuildInbound(o)
	n := 0
	for _, fc := range vi.FilterChains {
		if fc.Name != "0.0.0.0_9090" {
			continue
		}
		for _, f := range fc.Filters {
			if f.Name != "envoy.filters.network.http_connection_manager" {
				continue
			}
			var m hcm.HttpConnectionManager
			if err := f.GetTypedConfig().UnmarshalTo(&m); err != nil {
				t.Fatal(err)
			}
			n++
			h2 := m.GetHttp2ProtocolOptions()
			if m.GetStreamIdleTimeout().AsDuration() != time.Second || h2.GetMaxConcurrentStreams() != nil ||
				h2.GetInitialStreamWindowSize().GetValue() != 70000 || m.PathWithEscapedSlashesAction != hcm.HttpConnectionManager_REJECT_REQUEST {
				t.Errorf("gRPC chain HCM: stream idle %v, HTTP/2 %v, escaped slashes %v", m.StreamIdleTimeout, h2, m.PathWithEscapedSlashesAction)
			}
		}
	}
	if n == 0 {
		t.Fatal("no HTTP chain on the gRPC port")
	}
	if key := listener.ConnectionSettingsKey(cs); key == "" || key != listener.ConnectionSettingsKey(proto.Clone(cs).(*meshconfig.ProxyConfig_ConnectionSettings)) ||
		key == listener.ConnectionSettingsKey(nil) {
		t.Error("equal settings must key alike, and unlike none")
	}
}
