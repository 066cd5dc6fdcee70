package validation_test

import (
	"testing"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	telemetry "istio.io/api/telemetry/v1alpha1"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pkg/config/validation"
)

func TestValidateTelemetry(t *testing.T) {
	sel := &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "httpbin"}}
	prov := func(names ...string) []*telemetry.ProviderRef {
		var out []*telemetry.ProviderRef
		for _, n := range names {
			out = append(out, &telemetry.ProviderRef{Name: n})
		}
		return out
	}
	cases := []secCase{
		{name: "valid", spec: &telemetry.Telemetry{
			Selector: sel,
			Tracing: []*telemetry.Tracing{{
				Providers:                prov("zipkin"),
				RandomSamplingPercentage: wrapperspb.Double(10),
				CustomTags: map[string]*telemetry.Tracing_CustomTag{
					"env": {Type: &telemetry.Tracing_CustomTag_Environment{Environment: &telemetry.Tracing_Environment{Name: "POD"}}},
				},
			}},
			Metrics: []*telemetry.Metrics{{
				Providers:         prov("prometheus"),
				ReportingInterval: durationpb.New(15e9),
				Overrides: []*telemetry.MetricsOverrides{{
					Match: &telemetry.MetricSelector{MetricMatch: &telemetry.MetricSelector_Metric{Metric: telemetry.MetricSelector_REQUEST_COUNT}},
					TagOverrides: map[string]*telemetry.MetricsOverrides_TagOverride{
						"request_host": {Operation: telemetry.MetricsOverrides_TagOverride_REMOVE},
						"team":         {Value: "'a'"},
					},
				}},
			}},
			AccessLogging: []*telemetry.AccessLogging{{
				Providers: prov("envoy"),
				Filter:    &telemetry.AccessLogging_Filter{Expression: "response.code >= 400"},
			}},
		}},
		{name: "typed nil", spec: (*telemetry.Telemetry)(nil)},
		{name: "wrong type", spec: &typev1beta1.WorkloadSelector{}, wantErr: []string{"cannot cast to Telemetry"}},
		{name: "selector and targetRefs", spec: &telemetry.Telemetry{
			Selector:   sel,
			TargetRefs: []*typev1beta1.PolicyTargetReference{{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: "gw"}},
		}, wantErr: []string{"spec.targetRefs: only one of targetRefs or workloadSelector can be set"}},
		{name: "sampling out of range", spec: &telemetry.Telemetry{
			Tracing: []*telemetry.Tracing{{RandomSamplingPercentage: wrapperspb.Double(101)}},
		}, wantErr: []string{"spec.tracing[0].randomSamplingPercentage: randomSamplingPercentage must be in range [0.0, 100.0]"}},
		{name: "negative sampling", spec: &telemetry.Telemetry{
			Tracing: []*telemetry.Tracing{{RandomSamplingPercentage: wrapperspb.Double(-1)}},
		}, wantErr: []string{"randomSamplingPercentage must be in range"}},
		{name: "multiple tracing and providers warn", spec: &telemetry.Telemetry{
			Tracing: []*telemetry.Tracing{{Providers: prov("a", "b")}, {}},
		}, wantWarn: []string{"spec.tracing: multiple tracing is not currently supported",
			"spec.tracing[0].providers: multiple providers is not currently supported"}},
		{name: "empty provider names", spec: &telemetry.Telemetry{
			Tracing:       []*telemetry.Tracing{{Providers: []*telemetry.ProviderRef{{}}}},
			Metrics:       []*telemetry.Metrics{{Providers: []*telemetry.ProviderRef{nil}}},
			AccessLogging: []*telemetry.AccessLogging{{Providers: prov("ok", "")}},
		}, wantErr: []string{
			"spec.tracing[0].providers[0].name: providers.name may not be empty",
			"spec.metrics[0].providers[0].name: providers.name may not be empty",
			"spec.accessLogging[0].providers[1].name: providers.name may not be empty",
		}},
		{name: "custom tags", spec: &telemetry.Telemetry{
			Tracing: []*telemetry.Tracing{{CustomTags: map[string]*telemetry.Tracing_CustomTag{
				"lit":  {Type: &telemetry.Tracing_CustomTag_Literal{Literal: &telemetry.Tracing_Literal{}}},
				"hdr":  {Type: &telemetry.Tracing_CustomTag_Header{Header: &telemetry.Tracing_RequestHeader{}}},
				"null": nil,
			}}},
		}, wantErr: []string{
			"spec.tracing[0].customTags[lit].literal.value: literal tag value may not be empty",
			"spec.tracing[0].customTags[hdr].header.name: header tag name may not be empty",
			"spec.tracing[0].customTags[null]: tag 'null' may not have a nil value",
		}},
	}
	secRun(t, validation.ValidateTelemetry, cases)
}

func TestValidateTelemetryMetricsAndLogging(t *testing.T) {
	cases := []secCase{
		{name: "metric overrides", spec: &telemetry.Telemetry{
			Metrics: []*telemetry.Metrics{{Overrides: []*telemetry.MetricsOverrides{
				{Match: &telemetry.MetricSelector{MetricMatch: &telemetry.MetricSelector_CustomMetric{}}},
				{TagOverrides: map[string]*telemetry.MetricsOverrides_TagOverride{
					"a": {Operation: telemetry.MetricsOverrides_TagOverride_UPSERT},
					"b": {Operation: telemetry.MetricsOverrides_TagOverride_REMOVE, Value: "x"},
					"c": nil,
				}},
				nil,
			}}},
		}, wantErr: []string{
			"spec.metrics[0].overrides[0].match.customMetric: customMetric may not be empty",
			"spec.metrics[0].overrides[1].tagOverrides[a].value: tagOverrides.value must be set when operation is UPSERT",
			"spec.metrics[0].overrides[1].tagOverrides[b].value: tagOverrides.value may only be set when operation is UPSERT",
			"spec.metrics[0].overrides[1].tagOverrides[c]: tagOverrides may not be null",
			"spec.metrics[0].overrides[2]: tagOverrides may not be null",
		}},
		{name: "empty tag override name warns", spec: &telemetry.Telemetry{
			Metrics: []*telemetry.Metrics{{Overrides: []*telemetry.MetricsOverrides{{
				TagOverrides: map[string]*telemetry.MetricsOverrides_TagOverride{"": {Value: "x"}},
			}}}},
		}, wantWarn: []string{"spec.metrics[0].overrides[0].tagOverrides[]: tagOverrides.name may not be empty"}},
		{name: "access log filters", spec: &telemetry.Telemetry{
			AccessLogging: []*telemetry.AccessLogging{
				{Filter: &telemetry.AccessLogging_Filter{}},
				{Filter: &telemetry.AccessLogging_Filter{Expression: "has(request.headers"}},
			},
		}, wantErr: []string{
			"spec.accessLogging[0].filter.expression: must be a valid CEL expression, filter expression may not be empty",
			"spec.accessLogging[1].filter.expression: must be a valid CEL expression, ",
		}},
		{name: "bad reporting interval", spec: &telemetry.Telemetry{
			Metrics: []*telemetry.Metrics{{ReportingInterval: durationpb.New(-1)}},
		}, wantErr: []string{"spec.metrics[0].reportingInterval:"}},
	}
	secRun(t, validation.ValidateTelemetry, cases)
}
