package validation_test

import (
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pkg/config/validation"
)

func efValue(t *testing.T) *structpb.Struct {
	t.Helper()
	v, err := structpb.NewStruct(map[string]any{
		"name":         "envoy.filters.http.lua",
		"typed_config": map[string]any{"@type": "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua"},
	})
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
			"spec.configPatches[0].applyTo: Envoy filter: missing or unknown applyTo",
			"spec.configPatches[0].patch.value: Envoy filter: missing patch value for ADD operation",
			"spec.configPatches[1].patch: Envoy filter: missing patch",
			"spec.configPatches[2].patch.operation: Envoy filter: missing or unknown patch operation",
			"spec.configPatches[3].patch.value: Envoy filter: missing patch value for MERGE operation",
			"spec.configPatches[4]: Envoy filter: null config patch",
		}},
		{name: "remove with value warns", spec: efSpec(1,
			efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_REMOVE, v, cluster)),
			warns: []string{"spec.configPatches[0].patch.value: Envoy filter: patch value is ignored for the REMOVE operation"}},
		{name: "replace on cluster", spec: efSpec(1, efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_REPLACE, v, cluster)),
			errs: []string{"spec.configPatches[0].patch.operation: IST0152 the REPLACE operation is only valid for HTTP_FILTER and NETWORK_FILTER, not CLUSTER"}},
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
			"spec.configPatches[1].match.listener.filterChain.filter.subFilter: Envoy filter: subFilter match can be used with applyTo HTTP_FILTER only",
			"spec.configPatches[2].match.listener.filterChain.filter.subFilter: Envoy filter: subFilter match requires filter match with " + hcm,
		}},
		{name: "proxy version regex", spec: efSpec(1, efPatch(networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_Patch_ADD, v,
			&networking.EnvoyFilter_EnvoyConfigObjectMatch{Proxy: &networking.EnvoyFilter_ProxyMatch{ProxyVersion: "1.(2"}})),
			errs: []string{"spec.configPatches[0].match.proxy.proxyVersion: Envoy filter: invalid regex for proxy version"}},
		{name: "deprecated filter name warns", spec: efSpec(1,
			efPatch(networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_Patch_INSERT_FIRST, v, efListener("envoy.http_connection_manager", ""))),
			warns: []string{`spec.configPatches[0].match.listener.filterChain.filter.name: using deprecated filter name "envoy.http_connection_manager"`}},
		{name: "selector and targetRefs", spec: &networking.EnvoyFilter{
			WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "a"}},
			TargetRefs:       []*typev1beta1.PolicyTargetReference{{Kind: "Gateway", Group: "gateway.networking.k8s.io", Namespace: "other"}},
		}, errs: []string{
			"spec: only one of targetRefs or workloadSelector can be set",
			"spec.targetRefs[0].name: targetRef name must be set",
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
	)
	warn, err := validation.ValidateEnvoyFilter(netCfg(ef))
	netExpect(t, "warning", warn, []string{"spec.configPatches[0].patch.operation: IST0151"})
	netExpect(t, "error", err, []string{
		"spec.configPatches[1].patch.value: Envoy filter: missing patch value for MERGE operation",
		"spec.configPatches[2].patch.operation: IST0152",
	})
	if n := len(validation.Problems(err)); n != 2 {
		t.Errorf("got %d errors, want 2:\n%v", n, err)
	}
}
