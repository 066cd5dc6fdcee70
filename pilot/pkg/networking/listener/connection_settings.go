package listener

import (
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"
)

// ResolveConnectionSettings is the ProxyConfig connectionSettings a proxy's
// listeners follow, as Istio resolves them: those of pc (the proxy's own
// PROXY_CONFIG, else the mesh's defaultConfig), else the mesh's
// defaultConfig's; under the EDGE profile a gateway (router) gets Envoy's
// edge defaults for what is left unset. nil: none. The result is never
// one of the inputs' messages when defaults were filled in (those are
// shared).
func ResolveConnectionSettings(pc, meshDefault *meshconfig.ProxyConfig, router bool) *meshconfig.ProxyConfig_ConnectionSettings {
	cs := pc.GetConnectionSettings()
	if cs == nil {
		cs = meshDefault.GetConnectionSettings()
	}
	if cs == nil || cs.GetProfile() != meshconfig.ProxyConfig_ConnectionSettings_EDGE || !router {
		return cs
	}
	return edgeDefaults(cs)
}

// edgeDefaults fills what an EDGE profile leaves unset with Envoy's edge
// best practices, on a copy.
func edgeDefaults(cs *meshconfig.ProxyConfig_ConnectionSettings) *meshconfig.ProxyConfig_ConnectionSettings {
	cs = proto.Clone(cs).(*meshconfig.ProxyConfig_ConnectionSettings)
	i32 := func(v **wrapperspb.Int32Value, d int32) {
		if *v == nil {
			*v = wrapperspb.Int32(d)
		}
	}
	dur := func(v **durationpb.Duration, d time.Duration) {
		if *v == nil {
			*v = durationpb.New(d)
		}
	}
	i32(&cs.ListenerPerConnectionBufferLimitBytes, 32768)
	dur(&cs.HttpIdleTimeout, time.Hour)
	dur(&cs.HttpStreamIdleTimeout, 5*time.Minute)
	dur(&cs.HttpRequestTimeout, 5*time.Minute)
	dur(&cs.HttpRequestHeadersTimeout, time.Minute)
	i32(&cs.HttpMaxConcurrentStreams, 100)
	i32(&cs.Http2InitialStreamWindowSize, 65536)
	i32(&cs.Http2InitialConnectionWindowSize, 1048576)
	if cs.HttpHeadersWithUnderscoresAction == meshconfig.ProxyConfig_ConnectionSettings_HEADERS_WITH_UNDERSCORES_UNSPECIFIED {
		cs.HttpHeadersWithUnderscoresAction = meshconfig.ProxyConfig_ConnectionSettings_HEADERS_WITH_UNDERSCORES_REJECT_REQUEST
	}
	if cs.HttpMergeSlashes == nil {
		cs.HttpMergeSlashes = wrapperspb.Bool(true)
	}
	if cs.HttpPathWithEscapedSlashesAction == meshconfig.ProxyConfig_ConnectionSettings_PATH_WITH_ESCAPED_SLASHES_UNSPECIFIED {
		cs.HttpPathWithEscapedSlashesAction = meshconfig.ProxyConfig_ConnectionSettings_UNESCAPE_AND_REDIRECT
	}
	return cs
}

// ConnectionSettingsKey identifies connection settings in cache keys (""
// for none).
func ConnectionSettingsKey(cs *meshconfig.ProxyConfig_ConnectionSettings) string {
	if cs == nil {
		return ""
	}
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(cs)
	return string(b)
}

// nonNegative is an Int32Value as Envoy's UInt32Value; nil for unset or
// negative values, which would otherwise wrap to about 4 GiB.
func nonNegative(v *wrapperspb.Int32Value) *wrapperspb.UInt32Value {
	if v == nil || v.GetValue() < 0 {
		return nil
	}
	return wrapperspb.UInt32(uint32(v.GetValue()))
}

// applyConnectionSettings puts what connectionSettings set on an HTTP
// connection manager, last, as Istio does: they win over the mesh's path
// normalization, the proxy's IDLE_TIMEOUT and the 0s stream idle timeout.
func applyConnectionSettings(m *hcm.HttpConnectionManager, cs *meshconfig.ProxyConfig_ConnectionSettings) {
	if cs == nil {
		return
	}
	common := func() *core.HttpProtocolOptions {
		if m.CommonHttpProtocolOptions == nil {
			m.CommonHttpProtocolOptions = &core.HttpProtocolOptions{}
		}
		return m.CommonHttpProtocolOptions
	}
	if d := cs.GetHttpIdleTimeout(); d != nil {
		common().IdleTimeout = d
	}
	if d := cs.GetHttpMaxConnectionDuration(); d != nil {
		common().MaxConnectionDuration = d
	}
	if d := cs.GetHttpMaxStreamDuration(); d != nil {
		common().MaxStreamDuration = d
	}
	if d := cs.GetHttpStreamIdleTimeout(); d != nil {
		m.StreamIdleTimeout = d
	}
	if d := cs.GetHttpRequestTimeout(); d != nil {
		m.RequestTimeout = d
	}
	if d := cs.GetHttpRequestHeadersTimeout(); d != nil {
		m.RequestHeadersTimeout = d
	}
	if d := cs.GetHttpDrainTimeout(); d != nil {
		m.DrainTimeout = d
	}
	if cs.GetHttpMaxConcurrentStreams() != nil || cs.GetHttp2InitialStreamWindowSize() != nil || cs.GetHttp2InitialConnectionWindowSize() != nil {
		// set even when every value is negative (and so dropped), as Istio
		// sets it
		if m.Http2ProtocolOptions == nil {
			m.Http2ProtocolOptions = &core.Http2ProtocolOptions{}
		}
		h2 := m.Http2ProtocolOptions
		if v := nonNegative(cs.GetHttpMaxConcurrentStreams()); v != nil {
			h2.MaxConcurrentStreams = v
		}
		if v := nonNegative(cs.GetHttp2InitialStreamWindowSize()); v != nil {
			h2.InitialStreamWindowSize = v
		}
		if v := nonNegative(cs.GetHttp2InitialConnectionWindowSize()); v != nil {
			h2.InitialConnectionWindowSize = v
		}
	}
	if a := cs.GetHttpHeadersWithUnderscoresAction(); a != meshconfig.ProxyConfig_ConnectionSettings_HEADERS_WITH_UNDERSCORES_UNSPECIFIED {
		common().HeadersWithUnderscoresAction = underscoresAction(a)
	}
	if v := cs.GetHttpMergeSlashes(); v != nil {
		m.MergeSlashes = v.GetValue()
	}
	if a := cs.GetHttpPathWithEscapedSlashesAction(); a != meshconfig.ProxyConfig_ConnectionSettings_PATH_WITH_ESCAPED_SLASHES_UNSPECIFIED {
		m.PathWithEscapedSlashesAction = escapedSlashesAction(a)
	}
}

func underscoresAction(a meshconfig.ProxyConfig_ConnectionSettings_HeadersWithUnderscoresAction) core.HttpProtocolOptions_HeadersWithUnderscoresAction {
	switch a {
	case meshconfig.ProxyConfig_ConnectionSettings_HEADERS_WITH_UNDERSCORES_REJECT_REQUEST:
		return core.HttpProtocolOptions_REJECT_REQUEST
	case meshconfig.ProxyConfig_ConnectionSettings_HEADERS_WITH_UNDERSCORES_DROP_HEADER:
		return core.HttpProtocolOptions_DROP_HEADER
	}
	return core.HttpProtocolOptions_ALLOW
}

func escapedSlashesAction(a meshconfig.ProxyConfig_ConnectionSettings_PathWithEscapedSlashesAction) hcm.HttpConnectionManager_PathWithEscapedSlashesAction {
	switch a {
	case meshconfig.ProxyConfig_ConnectionSettings_REJECT_REQUEST:
		return hcm.HttpConnectionManager_REJECT_REQUEST
	case meshconfig.ProxyConfig_ConnectionSettings_UNESCAPE_AND_REDIRECT:
		return hcm.HttpConnectionManager_UNESCAPE_AND_REDIRECT
	case meshconfig.ProxyConfig_ConnectionSettings_UNESCAPE_AND_FORWARD:
		return hcm.HttpConnectionManager_UNESCAPE_AND_FORWARD
	}
	return hcm.HttpConnectionManager_KEEP_UNCHANGED
}

// PerConnectionBufferLimit is the per-connection buffer limit
// connectionSettings put on a gateway's listeners (nil: Envoy's default).
// Istio sets it on gateway listeners only.
func PerConnectionBufferLimit(cs *meshconfig.ProxyConfig_ConnectionSettings) *wrapperspb.UInt32Value {
	return nonNegative(cs.GetListenerPerConnectionBufferLimitBytes())
}
