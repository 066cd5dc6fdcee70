package envoyfilter_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/meshplane/istiod/pilot/pkg/networking/envoyfilter"
	"github.com/meshplane/istiod/pkg/config"
)

// benchListeners is a sidecar's LDS: 30 HTTP and 10 TCP outbound
// listeners, virtualOutbound, and virtualInbound with 5 HTTP chains (inline
// routes) and a TCP one.
func benchListeners(b *testing.B) []*listenerv3.Listener {
	hcm := func(stat, route string) string {
		return `{"name": "envoy.filters.network.http_connection_manager", "typedConfig": {
			"@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
			"statPrefix": "` + stat + `", ` + route + `,
			"httpFilters": [
				{"name": "envoy.filters.http.grpc_stats", "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.filters.http.grpc_stats.v3.FilterConfig", "emitFilterState": true}},
				{"name": "envoy.filters.http.fault", "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"}},
				{"name": "envoy.filters.http.cors", "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors"}},
				{"name": "envoy.filters.http.router", "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}}`
	}
	tcp := func(stat string) string {
		return `{"name": "envoy.filters.network.tcp_proxy", "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy", "statPrefix": "` +
			stat + `", "cluster": "` + stat + `"}}`
	}
	var ls []string
	for i := range 30 {
		port := 9000 + i
		ls = append(ls, fmt.Sprintf(`{"name": "0.0.0.0_%d", "address": {"socketAddress": {"address": "0.0.0.0", "portValue": %d}},
			"trafficDirection": "OUTBOUND", "filterChains": [{"filters": [%s]}]}`, port, port,
			hcm(fmt.Sprintf("outbound_0.0.0.0_%d", port), fmt.Sprintf(`"rds": {"routeConfigName": "%d", "configSource": {"ads": {}}}`, port))))
	}
	for i := range 10 {
		ls = append(ls, fmt.Sprintf(`{"name": "10.0.0.%d_3306", "address": {"socketAddress": {"address": "10.0.0.%d", "portValue": 3306}},
			"trafficDirection": "OUTBOUND", "filterChains": [{"filters": [%s]}]}`, i, i, tcp(fmt.Sprintf("outbound|3306||db%d", i))))
	}
	ls = append(ls, `{"name": "virtualOutbound", "address": {"socketAddress": {"address": "0.0.0.0", "portValue": 15001}},
		"trafficDirection": "OUTBOUND", "filterChains": [{"name": "PassthroughFilterChain", "filters": [`+tcp("PassthroughCluster")+`]}]}`)
	var chains []string
	for i := range 5 {
		port := 8000 + i
		chains = append(chains, fmt.Sprintf(`{"name": "0.0.0.0_%d", "filterChainMatch": {"destinationPort": %d}, "filters": [%s]}`, port, port,
			hcm(fmt.Sprintf("inbound_0.0.0.0_%d", port), fmt.Sprintf(`"routeConfig": {"name": "inbound|%d||", "virtualHosts": [{"name": "inbound|http|%d",
				"domains": ["*"], "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "inbound|%d||"}}]}]}`, port, port, port))))
	}
	chains = append(chains, `{"name": "0.0.0.0_5432", "filterChainMatch": {"destinationPort": 5432}, "filters": [`+tcp("inbound|5432||")+`]}`)
	ls = append(ls, `{"name": "virtualInbound", "address": {"socketAddress": {"address": "0.0.0.0", "portValue": 15006}},
		"trafficDirection": "INBOUND", "filterChains": [`+strings.Join(chains, ",")+`]}`)
	return decodeList(b, []byte("["+strings.Join(ls, ",")+"]"), func() *listenerv3.Listener { return &listenerv3.Listener{} })
}

// benchFilters are 50 EnvoyFilters of the proxy's namespace, each with one
// listener-class patch: 30 HTTP filters inserted before the router
// (outbound), 10 router merges, 5 listener merges by port, 5 TCP proxy
// merges.
func benchFilters(b *testing.B) []config.Config {
	var docs []string
	add := func(i int, patch string) {
		docs = append(docs, fmt.Sprintf(`apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: f%02d, namespace: ns, creationTimestamp: "%s"}
spec:
  configPatches:
%s`, i, time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC).Format(time.RFC3339), patch))
	}
	for i := range 30 {
		add(i, fmt.Sprintf(`  - applyTo: HTTP_FILTER
    match: {context: SIDECAR_OUTBOUND, listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager, subFilter: {name: envoy.filters.http.router}}}}}
    patch: {operation: INSERT_BEFORE, value: {name: lua-%d, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua, default_source_code: {inline_string: "-- %d"}}}}`, i, i))
	}
	for i := range 10 {
		add(30+i, `  - applyTo: HTTP_FILTER
    match: {listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager, subFilter: {name: envoy.filters.http.router}}}}}
    patch: {operation: MERGE, value: {typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router, suppress_envoy_headers: true}}}`)
	}
	for i := range 5 {
		add(40+i, fmt.Sprintf(`  - applyTo: LISTENER
    match: {context: SIDECAR_OUTBOUND, listener: {portNumber: %d}}
    patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: 1024}}`, 9000+i))
	}
	for i := range 5 {
		add(45+i, `  - applyTo: NETWORK_FILTER
    match: {listener: {filterChain: {filter: {name: envoy.filters.network.tcp_proxy}}}}
    patch: {operation: MERGE, value: {typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, idle_timeout: 60s}}}`)
	}
	return parseFilters(b, strings.Join(docs, "\n---\n"))
}

// BenchmarkPatchListeners patches a sidecar's 42 listeners with 50
// EnvoyFilters applying to it, and with none.
func BenchmarkPatchListeners(b *testing.B) {
	listeners := benchListeners(b)
	filters := compileAll(b, benchFilters(b))
	for _, bc := range []struct {
		name string
		ps   *envoyfilter.Patches
	}{
		{"none", nil},
		{"50-envoyfilters", envoyfilter.Select(sidecar("ns", nil), "istio-system", filters)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.ps != nil && bc.ps.Len() != 50 {
				b.Fatalf("%d patches", bc.ps.Len())
			}
			b.ReportAllocs()
			for b.Loop() {
				out, problems := envoyfilter.PatchListeners(bc.ps, envoyfilter.PatchContext{}, listeners)
				if len(out) != len(listeners) || len(problems) > 0 {
					b.Fatalf("%d listeners, problems %v", len(out), problems)
				}
			}
		})
	}
}

// BenchmarkSelect is the per-proxy cost of choosing and ordering 50
// EnvoyFilters (converted once).
func BenchmarkSelect(b *testing.B) {
	filters := compileAll(b, benchFilters(b))
	proxy := sidecar("ns", map[string]string{"app": "a"})
	b.ReportAllocs()
	for b.Loop() {
		if envoyfilter.Select(proxy, "istio-system", filters).Len() != 50 {
			b.Fatal("patches")
		}
	}
}

// BenchmarkCompile is the one-time conversion of 50 EnvoyFilters.
func BenchmarkCompile(b *testing.B) {
	cfgs := benchFilters(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range cfgs {
			envoyfilter.Compile(c)
		}
	}
}
