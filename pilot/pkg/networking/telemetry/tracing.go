package telemetry

import (
	"sort"
	"strings"

	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/type/metadata/v3"
	tracingv3 "github.com/envoyproxy/go-control-plane/envoy/type/tracing/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	meshconfig "istio.io/api/mesh/v1alpha1"
)

// Proxy is what the tracing tags say about the proxy.
type Proxy struct {
	Labels    map[string]string
	ClusterID string
	MeshID    string
	Namespace string
}

// Key identifies what the tracing tags say about the proxy: proxies with
// the same key get the same Tracing.
func (p Proxy) Key() string {
	return strings.Join([]string{p.ClusterID, p.MeshID, p.Namespace,
		p.Labels["service.istio.io/canonical-name"], p.Labels["service.istio.io/canonical-revision"]}, "|")
}

// defaultSampling is the percentage of requests traced when neither the
// proxy config nor the mesh says (Istio's PILOT_TRACE_SAMPLING default).
const defaultSampling = 1.0

// rbacDryRunTags are the results of dry-run authorization policies, read
// from the RBAC filter's metadata.
var rbacDryRunTags = map[string]string{
	"istio.authorization.dry_run.allow_policy.name":   "istio_dry_run_allow_shadow_effective_policy_id",
	"istio.authorization.dry_run.allow_policy.result": "istio_dry_run_allow_shadow_engine_result",
	"istio.authorization.dry_run.deny_policy.name":    "istio_dry_run_deny_shadow_effective_policy_id",
	"istio.authorization.dry_run.deny_policy.result":  "istio_dry_run_deny_shadow_engine_result",
}

// Tracing is the HCM tracing block of a proxy, nil when the mesh disables
// tracing.
func Tracing(m *meshconfig.MeshConfig, p Proxy) *hcm.HttpConnectionManager_Tracing {
	if !m.GetEnableTracing() {
		return nil
	}
	sampling := defaultSampling
	if s := m.GetDefaultConfig().GetTracing().GetSampling(); s > 0 {
		sampling = s
	}
	t := &hcm.HttpConnectionManager_Tracing{
		ClientSampling:  &typev3.Percent{Value: 100},
		RandomSampling:  &typev3.Percent{Value: sampling},
		OverallSampling: &typev3.Percent{Value: 100},
		CustomTags:      istioTags(m, p),
	}
	return t
}

// istioTags are the tags Istio adds to every span: the results of dry-run
// authorization policies and the workload's identity, sorted by tag.
func istioTags(m *meshconfig.MeshConfig, p Proxy) []*tracingv3.CustomTag {
	var tags []*tracingv3.CustomTag
	for tag, key := range rbacDryRunTags {
		tags = append(tags, &tracingv3.CustomTag{Tag: tag, Type: &tracingv3.CustomTag_Metadata_{Metadata: &tracingv3.CustomTag_Metadata{
			Kind:        &metadatav3.MetadataKind{Kind: &metadatav3.MetadataKind_Request_{Request: &metadatav3.MetadataKind_Request{}}},
			MetadataKey: &metadatav3.MetadataKey{Key: "envoy.filters.http.rbac", Path: []*metadatav3.MetadataKey_PathSegment{{Segment: &metadatav3.MetadataKey_PathSegment_Key{Key: key}}}},
		}}})
	}
	literal := func(tag, v string) *tracingv3.CustomTag {
		return &tracingv3.CustomTag{Tag: tag, Type: &tracingv3.CustomTag_Literal_{Literal: &tracingv3.CustomTag_Literal{Value: v}}}
	}
	tags = append(tags,
		literal("istio.canonical_revision", orElse(p.Labels["service.istio.io/canonical-revision"], "latest")),
		literal("istio.canonical_service", orElse(p.Labels["service.istio.io/canonical-name"], "unknown")),
		literal("istio.cluster_id", p.ClusterID),
		literal("istio.mesh_id", orElse(p.MeshID, orElse(m.GetDefaultConfig().GetMeshId(), m.GetTrustDomain()))),
		literal("istio.namespace", p.Namespace),
	)
	sort.Slice(tags, func(i, j int) bool { return tags[i].Tag < tags[j].Tag })
	return tags
}

func orElse(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
