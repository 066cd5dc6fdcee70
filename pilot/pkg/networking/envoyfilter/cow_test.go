package envoyfilter_test

import (
	"bytes"
	"sync"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"sigs.k8s.io/yaml"

	"github.com/meshplane/istiod/pilot/pkg/networking/envoyfilter"
)

// Two proxies' patch sets touch every level of resources shared between
// proxies (as the generators' caches share them).
const cowFilters = `
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: for-a, namespace: ns}
spec:
  workloadSelector: {labels: {app: a}}
  configPatches:
  - applyTo: LISTENER
    match: {listener: {portNumber: 9080}}
    patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: 1, listener_filters: [{name: merged, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector}}]}}
  - applyTo: LISTENER_FILTER
    match: {listener: {portNumber: 9080, listenerFilter: envoy.filters.listener.tls_inspector}}
    patch: {operation: MERGE, value: {typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector, enable_ja3_fingerprinting: true}}}
  - applyTo: LISTENER_FILTER
    match: {listener: {portNumber: 9080}}
    patch: {operation: INSERT_FIRST, value: {name: lf-first, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.original_dst.v3.OriginalDst}}}
  - applyTo: FILTER_CHAIN
    match: {listener: {portNumber: 9080}}
    patch: {operation: MERGE, value: {filter_chain_match: {server_names: [a.example.com]}, transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext, require_client_certificate: true}}}}
  - applyTo: NETWORK_FILTER
    match: {listener: {portNumber: 9080, filterChain: {filter: {name: envoy.filters.network.http_connection_manager}}}}
    patch: {operation: MERGE, value: {typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, server_name: a}}}
  - applyTo: HTTP_FILTER
    match: {listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager}}}}
    patch: {operation: INSERT_FIRST, value: {name: hf-first, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua, default_source_code: {inline_string: "-- a"}}}}
  - applyTo: HTTP_FILTER
    match: {listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager, subFilter: {name: envoy.filters.http.router}}}}}
    patch: {operation: MERGE, value: {typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router, suppress_envoy_headers: true}}}
  - applyTo: ROUTE_CONFIGURATION
    patch: {operation: MERGE, value: {request_headers_to_add: [{header: {key: x-a, value: a}}]}}
  - applyTo: VIRTUAL_HOST
    match: {routeConfiguration: {vhost: {name: "r:9080"}}}
    patch: {operation: MERGE, value: {domains: [a.example.com], retry_policy: {num_retries: 1}}}
  - applyTo: HTTP_ROUTE
    match: {routeConfiguration: {vhost: {name: "r:9080", route: {name: default}}}}
    patch: {operation: MERGE, value: {route: {timeout: 1s, retry_policy: {num_retries: 2}}}}
  - applyTo: CLUSTER
    match: {cluster: {service: r.ns.svc.cluster.local}}
    patch: {operation: MERGE, value: {connect_timeout: 1s, circuit_breakers: {thresholds: [{max_connections: 1}]}}}
  - applyTo: CLUSTER
    match: {cluster: {name: "outbound|9080|tls|r.ns.svc.cluster.local"}}
    patch: {operation: MERGE, value: {transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext, sni: a}}}}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: for-b, namespace: ns}
spec:
  workloadSelector: {labels: {app: b}}
  configPatches:
  - applyTo: HTTP_FILTER
    match: {listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager, subFilter: {name: envoy.filters.http.cors}}}}}
    patch: {operation: REMOVE}
  - applyTo: HTTP_FILTER
    match: {listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager, subFilter: {name: envoy.filters.http.router}}}}}
    patch: {operation: MERGE, value: {typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router, start_child_span: true}}}
  - applyTo: VIRTUAL_HOST
    match: {routeConfiguration: {vhost: {name: "r:9080"}}}
    patch: {operation: REPLACE, value: {name: "r:9080", domains: [b], routes: [{match: {prefix: /}, direct_response: {status: 200}}]}}
  - applyTo: CLUSTER
    match: {cluster: {service: r.ns.svc.cluster.local}}
    patch: {operation: MERGE, value: {connect_timeout: 2s, circuit_breakers: {thresholds: [{max_connections: 2}]}}}
  - applyTo: CLUSTER
    match: {cluster: {name: "outbound|9080|tls|r.ns.svc.cluster.local"}}
    patch: {operation: MERGE, value: {transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext, sni: b}}}}
`

const cowResources = `
listeners:
- name: 0.0.0.0_9080
  address: {socketAddress: {address: 0.0.0.0, portValue: 9080}}
  trafficDirection: OUTBOUND
  listenerFilters:
  - {name: envoy.filters.listener.tls_inspector, typedConfig: {"@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector}}
  filterChains:
  - transportSocket: {name: envoy.transport_sockets.tls, typedConfig: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext}}
    filters:
    - name: envoy.filters.network.http_connection_manager
      typedConfig:
        "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
        statPrefix: outbound_0.0.0.0_9080
        rds: {routeConfigName: "9080", configSource: {ads: {}, resourceApiVersion: V3}}
        httpFilters:
        - {name: envoy.filters.http.cors, typedConfig: {"@type": type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors}}
        - {name: envoy.filters.http.router, typedConfig: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}
- name: untouched
  address: {socketAddress: {address: 0.0.0.0, portValue: 7777}}
  trafficDirection: OUTBOUND
  filterChains:
  - filters: [{name: envoy.filters.network.tcp_proxy, typedConfig: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, statPrefix: u, cluster: u}}]
routes:
- name: "9080"
  virtualHosts:
  - name: "r:9080"
    domains: [r]
    routes: [{name: default, match: {prefix: /}, route: {cluster: "outbound|9080||r.ns.svc.cluster.local"}}]
  - name: "other:9080"
    domains: [other]
    routes: [{name: default, match: {prefix: /}, route: {cluster: other}}]
clusters:
- {name: "outbound|9080||r.ns.svc.cluster.local", type: EDS, edsClusterConfig: {edsConfig: {ads: {}}}, connectTimeout: 10s,
   circuitBreakers: {thresholds: [{maxConnections: 100}]}}
- name: "outbound|9080|tls|r.ns.svc.cluster.local"
  type: EDS
  edsClusterConfig: {edsConfig: {ads: {}}}
  connectTimeout: 10s
  transportSocket: {name: envoy.transport_sockets.tls, typedConfig: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext, sni: original}}
- {name: "outbound|80||untouched.ns.svc.cluster.local", type: EDS, edsClusterConfig: {edsConfig: {ads: {}}}, connectTimeout: 10s}
`

type cowInput struct {
	listeners []*listenerv3.Listener
	routes    []*routev3.RouteConfiguration
	clusters  []*clusterv3.Cluster
}

func loadCowInput(t testing.TB) cowInput {
	var raw struct{ Listeners, Routes, Clusters []any }
	if err := yaml.Unmarshal([]byte(cowResources), &raw); err != nil {
		t.Fatal(err)
	}
	js := func(v any) []byte {
		b, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	return cowInput{
		listeners: decodeList(t, js(raw.Listeners), func() *listenerv3.Listener { return &listenerv3.Listener{} }),
		routes:    decodeList(t, js(raw.Routes), func() *routev3.RouteConfiguration { return &routev3.RouteConfiguration{} }),
		clusters:  decodeList(t, js(raw.Clusters), func() *clusterv3.Cluster { return &clusterv3.Cluster{} }),
	}
}

func (in cowInput) encode(t testing.TB) []byte {
	return bytes.Join([][]byte{encodeList(t, in.listeners), encodeList(t, in.routes), encodeList(t, in.clusters)}, nil)
}

func patchAll(t testing.TB, ps *envoyfilter.Patches, in cowInput) cowInput {
	var out cowInput
	var p1, p2, p3 []envoyfilter.Problem
	out.listeners, p1 = envoyfilter.PatchListeners(ps, envoyfilter.PatchContext{}, in.listeners)
	out.routes, p2 = envoyfilter.PatchRoutes(ps, envoyfilter.PatchContext{}, in.routes)
	out.clusters, p3 = envoyfilter.PatchClusters(ps, envoyfilter.PatchContext{}, in.clusters)
	if all := append(append(p1, p2...), p3...); len(all) > 0 {
		t.Errorf("problems: %v", problemStrings(all))
	}
	return out
}

// Patching one proxy never changes what another proxy gets from the same
// shared resources: inputs stay as they were, results are repeatable, a
// resource no patch changes is passed through as is, and concurrent
// patching of shared inputs does not race (go test -race).
func TestCopyOnWrite(t *testing.T) {
	filters := compileAll(t, parseFilters(t, cowFilters))
	psA := envoyfilter.Select(sidecar("ns", map[string]string{"app": "a"}), "istio-system", filters)
	psB := envoyfilter.Select(sidecar("ns", map[string]string{"app": "b"}), "istio-system", filters)
	psC := envoyfilter.Select(sidecar("ns", map[string]string{"app": "c"}), "istio-system", filters)
	if psA.Len() != 12 || psB.Len() != 5 || !psC.Empty() {
		t.Fatalf("patches: a %d, b %d, c empty %v", psA.Len(), psB.Len(), psC.Empty())
	}
	shared := loadCowInput(t)
	before := shared.encode(t)

	a1 := patchAll(t, psA, shared)
	b1 := patchAll(t, psB, shared)
	a2 := patchAll(t, psA, shared)
	if !bytes.Equal(shared.encode(t), before) {
		t.Fatal("patching modified the shared input")
	}
	if !bytes.Equal(a1.encode(t), a2.encode(t)) {
		t.Error("patching proxy a again after b gives another result")
	}
	if bytes.Equal(a1.encode(t), before) || bytes.Equal(b1.encode(t), before) || bytes.Equal(a1.encode(t), b1.encode(t)) {
		t.Fatal("the patch sets do not change the resources differently")
	}
	if fresh := patchAll(t, psB, loadCowInput(t)); !bytes.Equal(fresh.encode(t), b1.encode(t)) {
		t.Error("proxy b's result from the shared input (after a's patching) differs from its result from a fresh copy")
	}
	// what no patch touches is passed through
	if a1.listeners[1] != shared.listeners[1] || a1.clusters[2] != shared.clusters[2] {
		t.Error("an unpatched resource was copied")
	}
	if a1.routes[0].VirtualHosts[1] != shared.routes[0].VirtualHosts[1] {
		t.Error("an unpatched virtual host was copied")
	}
	c := patchAll(t, psC, shared)
	for i := range shared.listeners {
		if c.listeners[i] != shared.listeners[i] {
			t.Error("a proxy without patches got a copied listener")
		}
	}

	// concurrently, on the same shared input
	var wg sync.WaitGroup
	results := make([][]byte, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps := psA
			if i%2 == 1 {
				ps = psB
			}
			results[i] = patchAll(t, ps, shared).encode(t)
		}()
	}
	wg.Wait()
	for i, r := range results {
		want := a1.encode(t)
		if i%2 == 1 {
			want = b1.encode(t)
		}
		if !bytes.Equal(r, want) {
			t.Errorf("concurrent patching %d: another result", i)
		}
	}
	if !bytes.Equal(shared.encode(t), before) {
		t.Fatal("concurrent patching modified the shared input")
	}
}
