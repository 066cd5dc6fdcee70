package generators_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crd"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
)

// benchEnvoyFilters are 50 EnvoyFilters of the bench sidecar's namespace,
// each with one patch of its listeners: 30 HTTP filters inserted before
// the router of outbound chains, 10 router merges, 5 listener merges by
// port, 5 merges into the passthrough TCP proxies.
func benchEnvoyFilters(b *testing.B) string {
	var docs []string
	add := func(i int, patch string) {
		docs = append(docs, fmt.Sprintf(`apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: f%02d, namespace: ns-0, creationTimestamp: "%s"}
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
    patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: %d}}`, benchPort, 1024+i))
	}
	for i := range 5 {
		add(45+i, `  - applyTo: NETWORK_FILTER
    match: {listener: {filterChain: {filter: {name: envoy.filters.network.tcp_proxy}}}}
    patch: {operation: MERGE, value: {typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, idle_timeout: 60s}}}`)
	}
	return strings.Join(docs, "\n---\n")
}

// BenchmarkSidecarListeners50EnvoyFilters measures one sidecar's LDS, built
// from scratch (a new snapshot each time, so nothing is cached) in a mesh
// of 100 services, with 50 EnvoyFilters patching its listeners and with
// none: the difference is what the patches cost a proxy's listener
// generation.
func BenchmarkSidecarListeners50EnvoyFilters(b *testing.B) {
	for _, n := range []int{0, 50} {
		b.Run(fmt.Sprintf("filters=%d", n), func(b *testing.B) {
			env, idx := benchEnv(b, 100)
			if n > 0 {
				for _, d := range crd.Parse([]byte(benchEnvoyFilters(b)), crd.Options{Domain: "cluster.local"}) {
					if d.Err != nil || d.Config == nil || d.Config.GroupVersionKind != gvk.EnvoyFilter {
						b.Fatalf("filter %d: %v", d.Index, d.Err)
					}
					if _, err := env.ConfigStore().Create(*d.Config); err != nil {
						b.Fatal(err)
					}
				}
			}
			addr, ds := benchServer(b, env, idx)
			conn, md := benchDial(b, addr, benchMeta)
			lds := []*discovery.DeltaDiscoveryRequest{{Node: &core.Node{Id: benchNode, Metadata: md}, TypeUrl: xds.ListenerType}}
			var last sidecarConfig
			var err error
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ds.InitPushContext(env)
				b.StartTimer()
				if last, err = deltaSteps(context.Background(), conn, lds); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if last.resources[xds.ListenerType] == 0 {
				b.Fatal("no listeners")
			}
			b.ReportMetric(float64(last.resources[xds.ListenerType]), "listeners")
			b.ReportMetric(float64(last.bytes[xds.ListenerType]), "lds-bytes")
		})
	}
}
