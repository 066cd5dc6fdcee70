package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pkg/config/validation"
)

// efValue is a patch value of a type the validation package links (so it
// is checked), valid for every applyTo the tests use.
func efValue(t *testing.T) *structpb.Struct {
	t.Helper()
	return efStruct(t, map[string]any{
		"name": hcm,
		"typed_config": map[string]any{
			"@type":       "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
			"stat_prefix": "inbound",
		},
	})
}

func efStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	v, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func efPatch(applyTo networking.EnvoyFilter_ApplyTo, op networking.EnvoyFilter_Patch_Operation, value *structpb.Struct,
	match *networking.EnvoyFilter_EnvoyConfigObjectMatch,
) *networking.EnvoyFilter_EnvoyConfigObjectPatch {
	return &networking.EnvoyFilter_EnvoyConfigObjectPatch{
		ApplyTo: applyTo, Match: match, Patch: &networking.EnvoyFilter_Patch{Operation: op, Value: value},
	}
}

func efListener(filter, sub string) *networking.EnvoyFilter_EnvoyConfigObjectMatch {
	fm := &networking.EnvoyFilter_ListenerMatch_FilterMatch{Name: filter}
	if sub != "" {
		fm.SubFilter = &networking.EnvoyFilter_ListenerMatch_SubFilterMatch{Name: sub}
	}
	return &networking.EnvoyFilter_EnvoyConfigObjectMatch{
		Context: networking.EnvoyFilter_SIDECAR_INBOUND,
		ObjectTypes: &networking.EnvoyFilter_EnvoyConfigObjectMatch_Listener{Listener: &networking.EnvoyFilter_ListenerMatch{
			FilterChain: &networking.EnvoyFilter_ListenerMatch_FilterChainMatch{Filter: fm},
		}},
	}
}

func efSpec(priority int32, patches ...*networking.EnvoyFilter_EnvoyConfigObjectPatch) *networking.EnvoyFilter {
	return &networking.EnvoyFilter{
		WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "reviews"}},
		ConfigPatches:    patches, Priority: priority,
	}
}

const hcm = "envoy.filters.network.http_connection_manager"

func TestValidateEnvoyFilter(t *testing.T) {
	v := efValue(t)
	cluster := &networking.EnvoyFilter_EnvoyConfigObjectMatch{
		ObjectTypes: &networking.EnvoyFilter_EnvoyConfigObjectMatch_Cluster{Cluster: &networking.EnvoyFilter_ClusterMatch{Service: "a"}},
	}
	netRun(t, validation.ValidateEnvoyFilter, []netCase{
		{name: "insert before with priority", spec: efSpec(10,
			efPatch(networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_Patch_INSERT_BEFORE, v, efListener(hcm, "envoy.filters.http.router")))},
		{name: "absolute operations need no priority", spec: efSpec(0,
			efPatch(networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_Patch_INSERT_FIRST, v, efListener(hcm, "")),
			efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_MERGE, v, cluster),
			efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_ADD, v, nil),
		)},
		{name: "insert before without priority", spec: efSpec(0,
			efPatch(networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_Patch_INSERT_BEFORE, v, efListener(hcm, "envoy.filters.http.router"))),
			warns: []string{"spec.configPatches[0].patch.operation: IST0151 patch uses the relative operation INSERT_BEFORE without a priority"}},
		{name: "replace and remove without priority", spec: efSpec(0,
			efPatch(networking.EnvoyFilter_NETWORK_FILTER, networking.EnvoyFilter_Patch_REPLACE, v, efListener("envoy.filters.network.tcp_proxy", "")),
			efPatch(networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_Patch_REMOVE, nil, efListener(hcm, "envoy.filters.http.cors"))),
			warns: []string{
				"spec.configPatches[0].patch.operation: IST0151 patch uses the relative operation REPLACE",
				"spec.configPatches[1].patch.operation: IST0151 patch uses the relative operation REMOVE",
			}},
		{name: "missing applyTo, patch and value", spec: efSpec(0,
			&networking.EnvoyFilter_EnvoyConfigObjectPatch{Patch: &networking.EnvoyFilter_Patch{Operation: networking.EnvoyFilter_Patch_ADD}},
			&networking.EnvoyFilter_EnvoyConfigObjectPatch{ApplyTo: networking.EnvoyFilter_CLUSTER},
			efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_INVALID, v, nil),
			efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_MERGE, nil, nil),
			nil,
		), errs: []string{
			"spec.configPatches[0].applyTo: Envoy filter: missing applyTo",
			"spec.configPatches[0].patch.value: Envoy filter: missing patch value for non-remove operation (ADD)",
			"spec.configPatches[1].patch: Envoy filter: missing patch",
			"spec.configPatches[2].patch.operation: Envoy filter: missing patch operation",
			"spec.configPatches[3].patch.value: Envoy filter: missing patch value for non-remove operation (MERGE)",
			"spec.configPatches[4]: Envoy filter: null config patch",
		}},
		{name: "remove with value warns", spec: efSpec(1,
			efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_REMOVE, v, cluster)),
			warns: []string{"spec.configPatches[0].patch.value: Envoy filter: patch value is ignored for the REMOVE operation"}},
		// Istio accepts REPLACE for every applyTo (its analyzer reports
		// IST0152); istiod applies it to filters and virtual hosts.
		{name: "replace on cluster warns", spec: efSpec(1, efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_REPLACE, v, cluster)),
			warns: []string{"spec.configPatches[0].patch.operation: IST0152 the REPLACE operation is only applied to HTTP_FILTER, " +
				"NETWORK_FILTER, LISTENER_FILTER and VIRTUAL_HOST patches; for CLUSTER it is ignored"}},
		{name: "replace on virtual host", spec: efSpec(1, efPatch(networking.EnvoyFilter_VIRTUAL_HOST, networking.EnvoyFilter_Patch_REPLACE, v, nil))},
		{name: "replace on virtual host without priority", spec: efSpec(0,
			efPatch(networking.EnvoyFilter_VIRTUAL_HOST, networking.EnvoyFilter_Patch_REPLACE, v, nil)),
			warns: []string{"spec.configPatches[0].patch.operation: IST0151 patch uses the relative operation REPLACE"}},
		{name: "add on http route is ignored", spec: efSpec(1, efPatch(networking.EnvoyFilter_HTTP_ROUTE, networking.EnvoyFilter_Patch_ADD, v, nil)),
			warns: []string{"spec.configPatches[0].patch.operation: IST0153 the ADD operation is ignored when applyTo is HTTP_ROUTE"}},
		{name: "match lines up with applyTo", spec: efSpec(1,
			efPatch(networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_Patch_INSERT_FIRST, v, cluster),
			efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_MERGE, v, efListener(hcm, "")),
		), errs: []string{
			"spec.configPatches[0].match: Envoy filter: applyTo for listener class objects cannot have non listener match",
			"spec.configPatches[1].match: Envoy filter: applyTo for cluster class objects cannot have non cluster match",
		}},
		{name: "filter matches", spec: efSpec(1,
			efPatch(networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_Patch_INSERT_FIRST, v, efListener("", "")),
			efPatch(networking.EnvoyFilter_NETWORK_FILTER, networking.EnvoyFilter_Patch_INSERT_FIRST, v, efListener(hcm, "envoy.filters.http.router")),
			efPatch(networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_Patch_INSERT_FIRST, v, efListener("envoy.filters.network.tcp_proxy", "x")),
		), errs: []string{
			"spec.configPatches[0].match.listener.filterChain.filter.name: Envoy filter: filter match has no name to match on",
			"spec.configPatches[1].match.listener.filterChain.filter.subFilter: Envoy filter: subfilter match can be used with applyTo HTTP_FILTER only",
			"spec.configPatches[2].match.listener.filterChain.filter.subFilter: Envoy filter: subfilter match requires filter match with " + hcm,
		}},
		{name: "proxy version regex", spec: efSpec(1, efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_ADD, v,
			&networking.EnvoyFilter_EnvoyConfigObjectMatch{Proxy: &networking.EnvoyFilter_ProxyMatch{ProxyVersion: "1.(2"}})),
			errs: []string{"spec.configPatches[0].match.proxy.proxyVersion: Envoy filter: invalid regex for proxy version"}},
		{name: "deprecated filter name warns", spec: efSpec(1,
			efPatch(networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_Patch_INSERT_FIRST, v, efListener("envoy.http_connection_manager", ""))),
			warns: []string{`spec.configPatches[0].match.listener.filterChain.filter.name: using deprecated filter name "envoy.http_connection_manager"`}},
		// CRD schema rules that Istio's validation does not check.
		{name: "selector and targetRefs warn", spec: &networking.EnvoyFilter{
			WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "a"}},
			TargetRefs:       []*typev1beta1.PolicyTargetReference{{Kind: "Gateway", Group: "gateway.networking.k8s.io", Namespace: "other"}},
		}, warns: []string{
			"spec: only one of targetRefs or workloadSelector can be set (a rule of the EnvoyFilter CRD schema",
			"spec.targetRefs[0].name: targetRef name must be set (a rule",
			"spec.targetRefs[0].namespace: targetRef namespace must not be set",
		}},
	})
}

// TestEnvoyFilterReportsAllProblems checks that errors and warnings of
// several patches come back together.
func TestEnvoyFilterReportsAllProblems(t *testing.T) {
	v := efValue(t)
	ef := efSpec(0,
		efPatch(networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_Patch_INSERT_AFTER, v, efListener(hcm, "envoy.filters.http.cors")),
		efPatch(networking.EnvoyFilter_LISTENER, networking.EnvoyFilter_Patch_MERGE, nil, nil),
		efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_REPLACE, v, nil),
		efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_MERGE, efStruct(t, map[string]any{"connect_timeout": 5.0}), nil),
	)
	warn, err := validation.ValidateEnvoyFilter(netCfg(ef))
	netExpect(t, "warning", warn, []string{"spec.configPatches[0].patch.operation: IST0151", "spec.configPatches[2].patch.operation: IST0152"})
	netExpect(t, "error", err, []string{
		"spec.configPatches[1].patch.value: Envoy filter: missing patch value for non-remove operation (MERGE)",
		"spec.configPatches[3].patch.value: Envoy filter: ",
		"(the value is not a valid envoy.config.cluster.v3.Cluster)",
	})
	if n := len(validation.Problems(err)); n != 2 {
		t.Errorf("got %d errors, want 2:\n%v", n, err)
	}
}

// Rejected exactly when Istio 1.31 rejects: what its validation does not
// check is at most a warning here.
func TestValidateEnvoyFilterRejectsWhatIstioRejects(t *testing.T) {
	v := efValue(t)
	waypoint := func(m *networking.EnvoyFilter_EnvoyConfigObjectMatch) *networking.EnvoyFilter_EnvoyConfigObjectMatch {
		m.Context = networking.EnvoyFilter_WAYPOINT
		return m
	}
	cluster := func() *networking.EnvoyFilter_EnvoyConfigObjectMatch {
		return &networking.EnvoyFilter_EnvoyConfigObjectMatch{
			ObjectTypes: &networking.EnvoyFilter_EnvoyConfigObjectMatch_Cluster{Cluster: &networking.EnvoyFilter_ClusterMatch{Service: "a"}},
		}
	}
	lua := efStruct(t, map[string]any{"name": "envoy.filters.http.lua", "typed_config": map[string]any{
		"@type": "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua", "default_source_code": map[string]any{"inline_string": "x"},
	}})
	netRun(t, validation.ValidateEnvoyFilter, []netCase{
		// Istio skips every check of a WAYPOINT patch
		// (pkg/config/validation/testdata/crds/envoyfilter-valid.yaml).
		{name: "waypoint patch is not validated", spec: efSpec(1,
			&networking.EnvoyFilter_EnvoyConfigObjectPatch{ApplyTo: networking.EnvoyFilter_HTTP_FILTER, Match: waypoint(cluster())},
			efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_REMOVE, nil, waypoint(efListener(hcm, ""))),
		), warns: []string{
			"spec.configPatches[0].match.context: Envoy filter: Istio does not validate patches of the WAYPOINT context",
			"spec.configPatches[0].match: Envoy filter: applyTo for listener class objects cannot have non listener match",
			"spec.configPatches[0].patch: Envoy filter: missing patch",
			"spec.configPatches[1].match: Envoy filter: applyTo for cluster class objects cannot have non cluster match",
		}},
		{name: "null patch is rejected even among waypoint ones", spec: efSpec(1, nil),
			errs: []string{"spec.configPatches[0]: Envoy filter: null config patch"}},
		// Istio checks the match of listener, filter chain, network and
		// HTTP filter patches only.
		{name: "listener filter with a cluster match warns", spec: efSpec(1,
			efPatch(networking.EnvoyFilter_LISTENER_FILTER, networking.EnvoyFilter_Patch_REMOVE, nil, cluster())),
			warns: []string{"spec.configPatches[0].match: Envoy filter: applyTo LISTENER_FILTER with a non listener match matches nothing"}},
		// Unknown enum numbers: Istio only rejects an applyTo that names no
		// Envoy type when there is a value to decode.
		{name: "unknown applyTo with a value", spec: efSpec(1, efPatch(99, networking.EnvoyFilter_Patch_ADD, v, nil)),
			errs: []string{"spec.configPatches[0].patch.value: Envoy filter: unknown object type for applyTo 99"}},
		{name: "unknown applyTo without a value", spec: efSpec(1, efPatch(99, networking.EnvoyFilter_Patch_REMOVE, nil, nil)),
			warns: []string{"spec.configPatches[0].applyTo: Envoy filter: unknown applyTo 99 matches nothing"}},
		{name: "unknown operation", spec: efSpec(1, efPatch(networking.EnvoyFilter_CLUSTER, 99, v, nil)),
			warns: []string{"spec.configPatches[0].patch.operation: Envoy filter: unknown patch operation 99 has no effect"}},
		{name: "unknown operation needs a value", spec: efSpec(1, efPatch(networking.EnvoyFilter_CLUSTER, 99, nil, nil)),
			errs: []string{"spec.configPatches[0].patch.value: Envoy filter: missing patch value for non-remove operation (99)"}, anyWarn: true},
		{name: "overlong proxy version is ignored", spec: efSpec(1, efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_ADD, v,
			&networking.EnvoyFilter_EnvoyConfigObjectMatch{Proxy: &networking.EnvoyFilter_ProxyMatch{ProxyVersion: "(" + strings.Repeat("1", 1024)}})),
			warns: []string{"spec.configPatches[0].match.proxy.proxyVersion: Envoy filter: proxyVersion match exceeds 1024 characters and will be ignored"}},
		// The value must decode as the Envoy type of applyTo, unknown
		// fields allowed.
		{name: "value with unknown fields", spec: efSpec(1, efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_MERGE,
			efStruct(t, map[string]any{"connect_timeout": "1s", "no_such_field": 1.0}), cluster()))},
		{name: "durations in Go syntax, as Istio's decoder reads them", spec: efSpec(1, efPatch(networking.EnvoyFilter_CLUSTER,
			networking.EnvoyFilter_Patch_MERGE, efStruct(t, map[string]any{"connect_timeout": "1m30s"}), cluster()))},
		{name: "value of a wrong type", spec: efSpec(1, efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_MERGE,
			efStruct(t, map[string]any{"connect_timeout": 5.0}), cluster())),
			errs: []string{"spec.configPatches[0].patch.value: Envoy filter: json: cannot unmarshal number into Go value of type string (the value is not a valid envoy.config.cluster.v3.Cluster)"}},
		{name: "unknown enum name in value", spec: efSpec(1, efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_MERGE,
			efStruct(t, map[string]any{"lb_policy": "NO_SUCH_POLICY"}), cluster())),
			errs: []string{`spec.configPatches[0].patch.value: Envoy filter: unknown value "\"NO_SUCH_POLICY\"" for enum envoy.config.cluster.v3.Cluster.LbPolicy`}},
		{name: "typed config of a known type is checked", spec: efSpec(1, efPatch(networking.EnvoyFilter_NETWORK_FILTER, networking.EnvoyFilter_Patch_INSERT_FIRST,
			efStruct(t, map[string]any{"name": hcm, "typed_config": map[string]any{
				"@type":       "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
				"stat_prefix": 7.0,
			}}), efListener(hcm, ""))),
			errs: []string{"spec.configPatches[0].patch.value: Envoy filter: can't unmarshal Any nested proto type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager: json: cannot unmarshal number into Go value of type string (the value is not a valid envoy.config.listener.v3.Filter)"}},
		{name: "typed config of a type unknown here warns", spec: efSpec(1, efPatch(networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_Patch_INSERT_FIRST,
			lua, efListener(hcm, ""))),
			warns: []string{"spec.configPatches[0].patch.value: Envoy filter: type type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua is unknown to this istiod"}},
		{name: "typed config of an Envoy v2 type", spec: efSpec(1, efPatch(networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_Patch_INSERT_FIRST,
			efStruct(t, map[string]any{"name": "envoy.lua", "typed_config": map[string]any{"@type": "type.googleapis.com/envoy.config.filter.http.lua.v2.Lua"}}),
			efListener(hcm, ""))),
			errs: []string{"spec.configPatches[0].patch.value: referenced type unknown (hint: try using the v3 XDS API): " +
				"Envoy filter: could not resolve Any message type: type.googleapis.com/envoy.config.filter.http.lua.v2.Lua"}},
	})
}
