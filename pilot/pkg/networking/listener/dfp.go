package listener

import (
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	dfpcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/dynamic_forward_proxy/v3"
	dfphttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_forward_proxy/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	snidfpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/sni_dynamic_forward_proxy/v3"

	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// dynamicForwardProxyName is the HTTP filter that resolves the Host header
// for the dynamic forward proxy clusters behind it.
const dynamicForwardProxyName = "envoy.filters.http.dynamic_forward_proxy"

// plaintextHTTPALPNs are what the HTTP inspector reports for plain HTTP
// (HTTP/1.0 is left out, as Istio does without PILOT_HTTP10: such
// connections stay TCP rather than being rejected by the HCM).
var plaintextHTTPALPNs = []string{"http/1.1", "h2c"}

// dynamicForwardProxy is the HTTP filter on the given DNS cache.
func dynamicForwardProxy(cache *dfpcommonv3.DnsCacheConfig) *hcm.HttpFilter {
	return httpFilter(dynamicForwardProxyName, protoconv.MessageToAny(&dfphttpv3.FilterConfig{
		ImplementationSpecifier: &dfphttpv3.FilterConfig_DnsCacheConfig{DnsCacheConfig: cache}}))
}

// dynamicDNSChain is virtualOutbound's chain for plain HTTP to unknown
// destinations under ALLOW_ANY_DYNAMIC_DNS: an HTTP connection manager
// whose only route sends every request to the dynamic forward proxy
// cluster, which resolves the Host header (other traffic stays on the
// catch-all TCP chain to PassthroughCluster).
func dynamicDNSChain(o Options) *listenerv3.FilterChain {
	rc := route.NewRouteConfiguration(0)
	rc.Name = route.AllowAnyDynamicDNS
	rc.VirtualHosts = []*routev3.VirtualHost{route.CatchAllDynamicDNS()}
	m := connectionManager("outbound_"+VirtualOutbound+"_"+route.AllowAnyDynamicDNS+";", telemetry.Outbound, o)
	m.RouteSpecifier = &hcm.HttpConnectionManager_RouteConfig{RouteConfig: rc}
	return &listenerv3.FilterChain{
		Name:             VirtualOutbound + "-catchall-tcp-http",
		FilterChainMatch: &listenerv3.FilterChainMatch{ApplicationProtocols: plaintextHTTPALPNs},
		Filters:          []*listenerv3.Filter{hcmFilter(m)},
	}
}

// sniDynamicForwardProxyName is the network filter that resolves the TLS
// server name for the dynamic forward proxy cluster behind it, under the
// name Istio gives it (go-control-plane's wellknown.SNIDynamicForwardProxy;
// Envoy finds the filter by its typed config).
const sniDynamicForwardProxyName = "envoy.extensions.filters.network.sni_dynamic_forward_proxy"

// serviceDNSCacheOf is the DNS cache of a DYNAMIC_DNS wildcard host, as its
// clusters have it.
func (o Options) serviceDNSCacheOf(host string) *dfpcommonv3.DnsCacheConfig {
	return &dfpcommonv3.DnsCacheConfig{Name: cluster.DNSCacheName(host), DnsLookupFamily: o.DNSLookupFamily}
}

// sniDynamicForwardProxy is the SNI forward proxy filter on a cache, to port.
func sniDynamicForwardProxy(port int, cache *dfpcommonv3.DnsCacheConfig) *listenerv3.Filter {
	return typedFilter(sniDynamicForwardProxyName, &snidfpv3.FilterConfig{DnsCacheConfig: cache,
		PortSpecifier: &snidfpv3.FilterConfig_PortValue{PortValue: uint32(port)}})
}
