package envoyfilter_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/networking/envoyfilter"
)

// Two EnvoyFilters a (older) and b, one patch each: is b's result order
// dependent on a's?
func TestConflicts(t *testing.T) {
	hcm := `listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager%s}}}`
	sub := func(name string) string { return fmt.Sprintf(hcm, ", subFilter: {name: "+name+"}") }
	lua := func(name string) string {
		return `{name: ` + name + `, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua, default_source_code: {inline_string: "-- x"}}}`
	}
	luaSource := func(src string) string {
		return `{typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua, default_source_code: {inline_string: "` + src + `"}}}`
	}
	router := func(field string) string {
		return `{typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router, ` + field + `}}`
	}
	cases := []struct {
		name         string
		applyTo      string
		a, b         string // "match ; operation ; value"
		priorityB    int
		wantConflict string // substring of the message, "" for none
	}{
		{"both insert first", "HTTP_FILTER", fmt.Sprintf(hcm, "") + ";INSERT_FIRST;" + lua("a"), fmt.Sprintf(hcm, "") + ";INSERT_FIRST;" + lua("b"), 0, "both insert first"},
		{"both insert first, ordered by priority", "HTTP_FILTER", fmt.Sprintf(hcm, "") + ";INSERT_FIRST;" + lua("a"), fmt.Sprintf(hcm, "") + ";INSERT_FIRST;" + lua("b"), 5, ""},
		{"inbound and outbound never meet", "HTTP_FILTER", "context: SIDECAR_INBOUND, " + fmt.Sprintf(hcm, "") + ";INSERT_FIRST;" + lua("a"),
			"context: SIDECAR_OUTBOUND, " + fmt.Sprintf(hcm, "") + ";INSERT_FIRST;" + lua("b"), 0, ""},
		{"different ports never meet", "HTTP_FILTER", "listener: {portNumber: 80};INSERT_FIRST;" + lua("a"), "listener: {portNumber: 81};INSERT_FIRST;" + lua("b"), 0, ""},
		{"both before the router", "HTTP_FILTER", sub("envoy.filters.http.router") + ";INSERT_BEFORE;" + lua("a"), sub("envoy.filters.http.router") + ";INSERT_BEFORE;" + lua("b"), 0, `both insert before "envoy.filters.http.router"`},
		{"before and after the router", "HTTP_FILTER", sub("envoy.filters.http.router") + ";INSERT_BEFORE;" + lua("a"), sub("envoy.filters.http.router") + ";INSERT_AFTER;" + lua("b"), 0, ""},
		{"insert first and append", "HTTP_FILTER", fmt.Sprintf(hcm, "") + ";INSERT_FIRST;" + lua("a"), fmt.Sprintf(hcm, "") + ";ADD;" + lua("b"), 0, ""},
		{"remove the anchor of an insertion", "HTTP_FILTER", sub("envoy.filters.http.cors") + ";REMOVE;", sub("envoy.filters.http.cors") + ";INSERT_AFTER;" + lua("b"), 0, `removes "envoy.filters.http.cors", which the other inserts after`},
		{"insert what the other anchors on", "HTTP_FILTER", fmt.Sprintf(hcm, "") + ";INSERT_FIRST;" + lua("lua-a"), sub("lua-a") + ";INSERT_BEFORE;" + lua("b"), 0, `one adds "lua-a"`},
		{"replace keeping the name, insert next to it", "HTTP_FILTER", sub("envoy.filters.http.cors") + ";REPLACE;" + lua("envoy.filters.http.cors"), sub("envoy.filters.http.cors") + ";INSERT_BEFORE;" + lua("b"), 0, ""},
		{"two replacements", "HTTP_FILTER", sub("envoy.filters.http.cors") + ";REPLACE;" + lua("x"), sub("envoy.filters.http.cors") + ";REPLACE;" + lua("why"), 0, "replace"},
		{"remove and merge", "HTTP_FILTER", sub("envoy.filters.http.router") + ";REMOVE;", sub("envoy.filters.http.router") + ";MERGE;" + router("suppress_envoy_headers: true"), 0, ""},
		{"merges of one field, differently", "HTTP_FILTER", sub("lua") + ";MERGE;" + lua("lua"), sub("lua") + ";MERGE;" + luaSource("other"), 0,
			"typed_config.default_source_code.inline_string"},
		// false is proto3's default: merging it changes nothing
		{"merges of a bool, one false", "HTTP_FILTER", sub("envoy.filters.http.router") + ";MERGE;" + router("suppress_envoy_headers: true"),
			sub("envoy.filters.http.router") + ";MERGE;" + router("suppress_envoy_headers: false"), 0, ""},
		{"merges of different fields", "HTTP_FILTER", sub("envoy.filters.http.router") + ";MERGE;" + router("suppress_envoy_headers: true"), sub("envoy.filters.http.router") + ";MERGE;" + router("start_child_span: true"), 0, ""},
		{"cluster merges, same field", "CLUSTER", "cluster: {service: a.ns.svc.cluster.local};MERGE;{connect_timeout: 1s}", "cluster: {portNumber: 80};MERGE;{connect_timeout: 2s}", 0, "connect_timeout"},
		{"cluster merges, other services", "CLUSTER", "cluster: {service: a.ns.svc.cluster.local};MERGE;{connect_timeout: 1s}", "cluster: {name: \"outbound|80||b.ns.svc.cluster.local\"};MERGE;{connect_timeout: 2s}", 0, ""},
		{"virtual host merges appending to one list", "VIRTUAL_HOST", "routeConfiguration: {vhost: {name: a}};MERGE;{domains: [x]}", "routeConfiguration: {vhost: {name: a}};MERGE;{domains: [yy]}", 0, "domains"},
		{"virtual host replaced and merged", "VIRTUAL_HOST", "routeConfiguration: {vhost: {name: a}};REPLACE;{name: a, domains: [x]}", "routeConfiguration: {vhost: {name: a}};MERGE;{domains: [yy]}", 0, "merge is lost"},
		{"route map merges, other keys", "ROUTE_CONFIGURATION", `routeConfiguration: {name: "80"};MERGE;{typed_per_filter_config: {a: {"@type": type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault}}}`,
			`routeConfiguration: {name: "80"};MERGE;{typed_per_filter_config: {b: {"@type": type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault}}}`, 0, ""},
		{"routes appended to one host", "HTTP_ROUTE", "routeConfiguration: {vhost: {name: a}};ADD;{match: {prefix: /a}, route: {cluster: a}}", "routeConfiguration: {vhost: {name: a}};ADD;{match: {prefix: /b}, route: {cluster: b}}", 0, "both append"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := func(name string, prio int, created, spec string) string {
				parts := strings.SplitN(spec, ";", 3)
				value := ""
				if parts[2] != "" {
					value = ", value: " + parts[2]
				}
				return fmt.Sprintf(`apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: %s, namespace: ns, creationTimestamp: "%s"}
spec:
  priority: %d
  configPatches:
  - applyTo: %s
    match: {%s}
    patch: {operation: %s%s}
`, name, created, prio, tc.applyTo, parts[0], parts[1], value)
			}
			in := doc("a", 0, "2026-01-01T00:00:00Z", tc.a) + "---\n" + doc("b", tc.priorityB, "2026-01-01T00:00:01Z", tc.b)
			filters := compileAll(t, parseFilters(t, in))
			for _, f := range filters {
				if len(f.Problems()) > 0 {
					t.Fatalf("%v", problemStrings(f.Problems()))
				}
			}
			got := envoyfilter.Conflicts(envoyfilter.Select(sidecar("ns", nil), "istio-system", filters))
			switch {
			case tc.wantConflict == "" && len(got) > 0:
				t.Errorf("want none, got %v", problemStrings(got))
			case tc.wantConflict != "" && (len(got) != 1 || !strings.Contains(got[0].Message, tc.wantConflict) || got[0].Name != "b"):
				t.Errorf("want one on b containing %q, got %v", tc.wantConflict, problemStrings(got))
			}
		})
	}
}
