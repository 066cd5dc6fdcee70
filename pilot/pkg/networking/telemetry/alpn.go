package telemetry

import (
	"google.golang.org/protobuf/proto"
	alpn "istio.io/api/envoy/config/filter/http/alpn/v2alpha1"

	"github.com/meshplane/istiod/pkg/protoconv"
)

// ALPNName is Istio's ALPN override HTTP filter.
const ALPNName = "istio.alpn"

// ALPN makes outbound mTLS connections announce the HTTP version of the
// request next to "istio", so the peer's inbound listener can pick its HTTP
// chain without sniffing.
var ALPN = protoconv.Constant(func() proto.Message {
	return &alpn.FilterConfig{AlpnOverride: []*alpn.FilterConfig_AlpnOverride{
		{UpstreamProtocol: alpn.FilterConfig_HTTP10, AlpnOverride: []string{"istio-http/1.0", "istio", "http/1.0"}},
		{UpstreamProtocol: alpn.FilterConfig_HTTP11, AlpnOverride: []string{"istio-http/1.1", "istio", "http/1.1"}},
		{UpstreamProtocol: alpn.FilterConfig_HTTP2, AlpnOverride: []string{"istio-h2", "istio", "h2"}},
	}}
})

// MTLSHTTPALPNs are the ALPN values an Istio client sends for HTTP over
// mTLS (what ALPN sets), which inbound HTTP chains match.
var MTLSHTTPALPNs = []string{"istio-http/1.0", "istio-http/1.1", "istio-h2"}
