package generators_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

// efOrderService is the HTTP service of TestEnvoyFilterOrderHTTPFilters:
// its sidecar client gets the outbound listener 0.0.0.0_8080.
const efOrderService = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: web, namespace: app}
spec:
  hosts: [web.app.svc.cluster.local]
  addresses: [10.9.0.1]
  ports: [{number: 8080, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.1.0.1}]
`

// efOrderFilters: the root namespace's terminal-router filter (priority
// 0: re-adds the router at the end of the chain and inserts root.authz
// before it) and the workload namespace's tenant filter (priority -5:
// appends ns.tenant, relying on the root filter to put the router back
// after it).
const efOrderFilters = `---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: terminal-router, namespace: istio-system, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  configPatches:
  - applyTo: HTTP_FILTER
    match:
      context: SIDECAR_OUTBOUND
      listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager, subFilter: {name: envoy.filters.http.router}}}}
    patch: {operation: REMOVE}
  - applyTo: HTTP_FILTER
    match:
      context: SIDECAR_OUTBOUND
      listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager}}}
    patch:
      operation: ADD
      value: {name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router, suppress_envoy_headers: true}}
  - applyTo: HTTP_FILTER
    match:
      context: SIDECAR_OUTBOUND
      listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager, subFilter: {name: envoy.filters.http.router}}}}
    patch:
      operation: INSERT_BEFORE
      value: {name: root.authz, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua, default_source_code: {inline_string: "-- root"}}}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: tenant, namespace: app, creationTimestamp: "2026-01-01T01:00:00Z"}
spec:
  priority: -5
  configPatches:
  - applyTo: HTTP_FILTER
    match:
      context: SIDECAR_OUTBOUND
      listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager}}}
    patch:
      operation: ADD
      value: {name: ns.tenant, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua, default_source_code: {inline_string: "-- tenant"}}}
`

// outboundHTTPFilters serves the mesh of yaml and returns the names of
// the HTTP filters of the app client's outbound listener 0.0.0.0_8080.
func outboundHTTPFilters(t *testing.T, yaml string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mesh.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serveFile(t, path, nil, nil)
	c := xdstest.Dial(t, s, adsc.Config{NodeID: "sidecar~10.1.0.9~client-abc.app~app.svc.cluster.local",
		Metadata: map[string]any{"NAMESPACE": "app", "LABELS": map[string]any{"app": "client"}}})
	if err := c.Watch(xds.ListenerType); err != nil {
		t.Fatal(err)
	}
	const name = "0.0.0.0_8080"
	l, _ := xdstest.Next(t, c).Resources[name].(*listenerv3.Listener)
	if l == nil {
		t.Fatalf("no listener %s", name)
	}
	var out []string
	for _, fc := range l.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			m := &hcm.HttpConnectionManager{}
			if f.GetName() != "envoy.filters.network.http_connection_manager" || f.GetTypedConfig().UnmarshalTo(m) != nil {
				continue
			}
			names := filterNames(m.GetHttpFilters())
			if out != nil && !slices.Equal(out, names) {
				t.Fatalf("%s: filter chains with different HTTP filters: %v and %v", name, out, names)
			}
			out = names
		}
	}
	if out == nil {
		t.Fatalf("%s: no HTTP connection manager", name)
	}
	return out
}

// The EnvoyFilters of a proxy apply in Istio 1.31's order: priority across
// the root and the workload namespace, so the workload's priority -5
// filter runs before the root's priority 0 one. Its ns.tenant (appended
// after the router) ends up before root.authz, and the root filter's
// re-added router last, as Istio's istiod builds the chain. In the order
// "root namespace first, then priority" ns.tenant would land after the
// router, which Envoy rejects.
func TestEnvoyFilterOrderHTTPFilters(t *testing.T) {
	base := outboundHTTPFilters(t, efOrderService)
	if len(base) == 0 || base[len(base)-1] != "envoy.filters.http.router" {
		t.Fatalf("without EnvoyFilters: %v, want the router last", base)
	}
	got := outboundHTTPFilters(t, efOrderService+efOrderFilters)
	want := append(slices.Clone(base[:len(base)-1]), "ns.tenant", "root.authz", "envoy.filters.http.router")
	if !slices.Equal(got, want) {
		t.Errorf("HTTP filters\n got %v\nwant %v", got, want)
	}
}
