package envoyfilter_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/networking/envoyfilter"
)

// Analyze reports what istioctl analyze's EnvoyPatchAnalyzer and schema
// validation report, case by case (the reference test covers the real
// run).
func TestAnalyze(t *testing.T) {
	cases := []struct {
		name  string
		input string
		want  []string // "code patch", besides IST0133 -1 of every filter
	}{
		{
			name: "relative operations without priority",
			input: `
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: a, namespace: ns}
spec:
  configPatches:
  - {applyTo: HTTP_FILTER, patch: {operation: REMOVE}}
  - {applyTo: HTTP_FILTER, patch: {operation: REPLACE, value: {name: x}}}
  - {applyTo: NETWORK_FILTER, patch: {operation: INSERT_BEFORE, value: {name: x}}}
  - {applyTo: CLUSTER, patch: {operation: INSERT_AFTER, value: {name: x}}}
  - {applyTo: VIRTUAL_HOST, patch: {operation: REPLACE, value: {name: x}}}
  - {applyTo: CLUSTER, patch: {operation: MERGE, value: {name: x}}}
  - {applyTo: HTTP_FILTER, patch: {operation: INSERT_FIRST, value: {name: x}}}
  - {applyTo: HTTP_FILTER, patch: {operation: ADD, value: {name: x}}}
`,
			want: []string{"IST0151 0", "IST0151 1", "IST0151 2", "IST0151 3", "IST0151 4"},
		},
		{
			name: "a priority silences IST0151, not the misuse errors",
			input: `
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: a, namespace: ns}
spec:
  priority: -1
  configPatches:
  - {applyTo: HTTP_FILTER, patch: {operation: REMOVE}}
  - {applyTo: ROUTE_CONFIGURATION, patch: {operation: ADD, value: {name: x}}}
  - {applyTo: HTTP_ROUTE, patch: {operation: REMOVE}}
  - {applyTo: CLUSTER, patch: {operation: REPLACE, value: {name: x}}}
  - {applyTo: LISTENER_FILTER, patch: {operation: REPLACE, value: {name: x}}}
`,
			want: []string{"IST0153 1", "IST0154 2", "IST0152 3", "IST0152 4"},
		},
		{
			name: "a proxyVersion patch seen before with the same name: IST0155",
			input: `
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: a, namespace: ns}
spec:
  configPatches:
  - applyTo: HTTP_FILTER
    match: {proxy: {proxyVersion: '^1\.31'}}
    patch: {operation: INSERT_FIRST, value: {name: lua}}
  - applyTo: HTTP_FILTER
    match: {listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager}}}}
    patch: {operation: REMOVE}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: b, namespace: ns}
spec:
  configPatches:
  - {applyTo: HTTP_FILTER, patch: {operation: REPLACE, value: {name: lua}}}
  - {applyTo: HTTP_FILTER, patch: {operation: REPLACE, value: {name: other}}}
  - applyTo: HTTP_FILTER
    match: {proxy: {proxyVersion: '^1\.31'}, listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager}}}}
    patch: {operation: INSERT_FIRST, value: {typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}}
  - applyTo: NETWORK_FILTER
    match: {listener: {filterChain: {filter: {name: envoy.filters.network.http_connection_manager}}}}
    patch: {operation: INSERT_BEFORE, value: {typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}}
`,
			// a#1 has no value, so no name: it is "" (no proxyVersion patch
			// named "" before it); b#3 is named by its filter match, as b#2
			want: []string{"IST0151 a#1", "IST0155 b#0", "IST0151 b#1", "IST0155 b#3"},
		},
		{
			name: "the analyzer stops at a patch without patch",
			input: `
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: a, namespace: ns}
spec:
  configPatches:
  - {applyTo: HTTP_FILTER, patch: {operation: REMOVE}}
  - {applyTo: HTTP_FILTER}
  - {applyTo: HTTP_FILTER, patch: {operation: REMOVE}}
`,
			want: []string{"IST0151 0"},
		},
		{
			name: "unknown fields are schema warnings",
			input: `
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: a, namespace: ns}
spec:
  priority: 1
  configPatches:
  - {applyTo: CLUSTER, patch: {operation: MERGE, value: {no_such_field: 1}}}
`,
			want: []string{"IST0133 0"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfgs := parseFilters(t, tc.input)
			multi := len(cfgs) > 1
			var got []string
			for _, p := range envoyfilter.Analyze(cfgs) {
				if p.Code == envoyfilter.CodeSchemaWarning && p.Patch < 0 {
					if !strings.Contains(p.Message, "EnvoyFilter exposes internal implementation details") {
						t.Errorf("IST0133 message: %s", p.Message)
					}
					continue
				}
				idx := p.Field()
				idx = strings.TrimSuffix(strings.TrimPrefix(idx, "spec.configPatches["), "]")
				if multi {
					idx = p.Name + "#" + idx
				}
				got = append(got, p.Code+" "+idx)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
