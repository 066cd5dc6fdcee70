package telemetry_test

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"
	statspb "istio.io/api/envoy/extensions/stats"
	meshconfig "istio.io/api/mesh/v1alpha1"
	tpb "istio.io/api/telemetry/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
	"github.com/meshplane/istiod/pkg/config"
)

func tel(ns, name string, spec *tpb.Telemetry) *config.Config {
	return &config.Config{Meta: config.Meta{Namespace: ns, Name: name}, Spec: spec}
}

var testMesh = &meshconfig.MeshConfig{ExtensionProviders: []*meshconfig.MeshConfig_ExtensionProvider{
	{Name: "a", Provider: &meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLog{EnvoyFileAccessLog: &meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLogProvider{Path: "/a"}}},
	{Name: "b", Provider: &meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLog{EnvoyFileAccessLog: &meshconfig.MeshConfig_ExtensionProvider_EnvoyFileAccessLogProvider{Path: "/b"}}},
	{Name: "prometheus", Provider: &meshconfig.MeshConfig_ExtensionProvider_Prometheus{Prometheus: &meshconfig.MeshConfig_ExtensionProvider_PrometheusMetricsProvider{}}},
}}

func logs(c *telemetry.Computed, mode telemetry.Mode) (map[string]bool, bool) {
	specs, ok := c.Logging(mode)
	out := map[string]bool{}
	for _, s := range specs {
		out[s.Provider.Name] = !s.Disabled
	}
	return out, ok
}

func provider(names ...string) []*tpb.ProviderRef {
	var out []*tpb.ProviderRef
	for _, n := range names {
		out = append(out, &tpb.ProviderRef{Name: n})
	}
	return out
}

// The merge rules of access logging, each as Istio 1.31 applies them.
func TestAccessLoggingMerge(t *testing.T) {
	root := tel("istio-system", "mesh", &tpb.Telemetry{AccessLogging: []*tpb.AccessLogging{{Providers: provider("a")}}})
	cases := []struct {
		name       string
		layers     model.LayeredPolicies
		mode       telemetry.Mode
		want       map[string]bool
		configured bool
	}{
		{"nothing: mesh accessLogFile applies", model.LayeredPolicies{}, telemetry.Client, map[string]bool{}, false},
		{"root provider", model.LayeredPolicies{Root: root}, telemetry.Server, map[string]bool{"a": true}, true},
		{"namespace replaces the providers", model.LayeredPolicies{Root: root,
			Namespace: tel("ns", "n", &tpb.Telemetry{AccessLogging: []*tpb.AccessLogging{{Providers: provider("b")}}})},
			telemetry.Client, map[string]bool{"b": true}, true},
		{"disabled for SERVER only (no provider: the parent's)", model.LayeredPolicies{Root: root,
			Namespace: tel("ns", "n", &tpb.Telemetry{AccessLogging: []*tpb.AccessLogging{{Match: &tpb.AccessLogging_LogSelector{Mode: tpb.WorkloadMode_SERVER},
				Disabled: wrapperspb.Bool(true)}}})},
			telemetry.Server, map[string]bool{"a": false}, true},
		{"... and CLIENT keeps it", model.LayeredPolicies{Root: root,
			Namespace: tel("ns", "n", &tpb.Telemetry{AccessLogging: []*tpb.AccessLogging{{Match: &tpb.AccessLogging_LogSelector{Mode: tpb.WorkloadMode_SERVER},
				Disabled: wrapperspb.Bool(true)}}})},
			telemetry.Client, map[string]bool{"a": true}, true},
		{"a child that omits disabled does not re-enable", model.LayeredPolicies{Root: tel("istio-system", "mesh", &tpb.Telemetry{AccessLogging: []*tpb.AccessLogging{{Providers: provider("a"), Disabled: wrapperspb.Bool(true)}}}),
			Workload: tel("ns", "w", &tpb.Telemetry{Tracing: []*tpb.Tracing{{RandomSamplingPercentage: wrapperspb.Double(1)}}})},
			telemetry.Client, map[string]bool{"a": false}, true},
		{"disabled: false re-enables", model.LayeredPolicies{Root: tel("istio-system", "mesh", &tpb.Telemetry{AccessLogging: []*tpb.AccessLogging{{Providers: provider("a"), Disabled: wrapperspb.Bool(true)}}}),
			Workload: tel("ns", "w", &tpb.Telemetry{AccessLogging: []*tpb.AccessLogging{{Disabled: wrapperspb.Bool(false)}}})},
			telemetry.Client, map[string]bool{"a": true}, true},
	}
	for _, c := range cases {
		got, ok := logs(telemetry.Compute(c.layers, testMesh), c.mode)
		if ok != c.configured || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v (configured %v), want %v (configured %v)", c.name, got, ok, c.want, c.configured)
		}
	}
}

func TestTracingMerge(t *testing.T) {
	m := &meshconfig.MeshConfig{ExtensionProviders: []*meshconfig.MeshConfig_ExtensionProvider{
		{Name: "otel", Provider: &meshconfig.MeshConfig_ExtensionProvider_Opentelemetry{Opentelemetry: &meshconfig.MeshConfig_ExtensionProvider_OpenTelemetryTracingProvider{Service: "otel.x", Port: 4317}}},
	}}
	root := tel("istio-system", "mesh", &tpb.Telemetry{Tracing: []*tpb.Tracing{{Providers: provider("otel"), RandomSamplingPercentage: wrapperspb.Double(5)}}})
	c := telemetry.Compute(model.LayeredPolicies{Root: root}, m)
	spec, ok := c.Tracing(telemetry.Client)
	if !ok || spec.Disabled || spec.Provider.GetName() != "otel" || *spec.RandomSamplingPercentage != 5 {
		t.Errorf("root: %+v %v", spec, ok)
	}
	w := tel("ns", "w", &tpb.Telemetry{Tracing: []*tpb.Tracing{{Match: &tpb.Tracing_TracingSelector{Mode: tpb.WorkloadMode_SERVER},
		DisableSpanReporting: wrapperspb.Bool(true)}}})
	c = telemetry.Compute(model.LayeredPolicies{Root: root, Workload: w}, m)
	if s, _ := c.Tracing(telemetry.Server); !s.Disabled {
		t.Error("server spans reported despite disableSpanReporting for SERVER")
	}
	if s, _ := c.Tracing(telemetry.Client); s.Disabled {
		t.Error("client spans off: the workload only disabled SERVER")
	}
	if _, ok := telemetry.Compute(model.LayeredPolicies{}, m).Tracing(telemetry.Client); ok {
		t.Error("tracing configured without any Telemetry or default provider")
	}
	// a provider that does not exist turns tracing off
	bad := tel("istio-system", "mesh", &tpb.Telemetry{Tracing: []*tpb.Tracing{{Providers: provider("nope")}}})
	if s, ok := telemetry.Compute(model.LayeredPolicies{Root: bad}, m).Tracing(telemetry.Client); !ok || !s.Disabled {
		t.Errorf("unknown provider: %+v", s)
	}
}

func statsOf(t *testing.T, c *telemetry.Computed, class telemetry.Class) []*statspb.PluginConfig {
	t.Helper()
	var out []*statspb.PluginConfig
	for _, f := range c.HTTPStats(class) {
		pc := &statspb.PluginConfig{}
		if err := f.GetTypedConfig().UnmarshalTo(pc); err != nil {
			t.Fatal(err)
		}
		out = append(out, pc)
	}
	return out
}

func TestMetricsMerge(t *testing.T) {
	upsert := &tpb.Telemetry{Metrics: []*tpb.Metrics{{Providers: provider("prometheus"), Overrides: []*tpb.MetricsOverrides{{
		Match:        &tpb.MetricSelector{MetricMatch: &tpb.MetricSelector_Metric{Metric: tpb.MetricSelector_REQUEST_COUNT}, Mode: tpb.WorkloadMode_CLIENT},
		TagOverrides: map[string]*tpb.MetricsOverrides_TagOverride{"request_host": {Operation: tpb.MetricsOverrides_TagOverride_UPSERT, Value: "request.host"}, "x": {Operation: tpb.MetricsOverrides_TagOverride_REMOVE}},
	}}}}}
	c := telemetry.Compute(model.LayeredPolicies{Root: tel("istio-system", "mesh", upsert)}, testMesh)
	client := statsOf(t, c, telemetry.SidecarOutbound)
	if len(client) != 1 || len(client[0].Metrics) != 1 || client[0].Metrics[0].Name != "requests_total" ||
		client[0].Metrics[0].Dimensions["request_host"] != "request.host" || !reflect.DeepEqual(client[0].Metrics[0].TagsToRemove, []string{"x"}) ||
		client[0].DisableHostHeaderFallback {
		t.Errorf("client stats %v", client)
	}
	server := statsOf(t, c, telemetry.SidecarInbound)
	if len(server) != 1 || len(server[0].Metrics) != 0 || !server[0].DisableHostHeaderFallback {
		t.Errorf("server stats %v", server)
	}
	// disabling ALL_METRICS for SERVER drops the server filter only
	off := &tpb.Telemetry{Metrics: []*tpb.Metrics{{Overrides: []*tpb.MetricsOverrides{{
		Match: &tpb.MetricSelector{Mode: tpb.WorkloadMode_SERVER}, Disabled: wrapperspb.Bool(true)}}}}}
	c = telemetry.Compute(model.LayeredPolicies{Root: tel("istio-system", "mesh", upsert), Namespace: tel("ns", "n", off)}, testMesh)
	if got := statsOf(t, c, telemetry.SidecarInbound); len(got) != 0 {
		t.Errorf("server stats after disabling ALL_METRICS: %v", got)
	}
	if got := statsOf(t, c, telemetry.SidecarOutbound); len(got) != 1 {
		t.Errorf("client stats after disabling the server's: %v", got)
	}
	if got := statsOf(t, telemetry.Compute(model.LayeredPolicies{}, testMesh), telemetry.SidecarOutbound); len(got) != 0 {
		t.Errorf("stats without Telemetry or default providers: %v", got)
	}
}
