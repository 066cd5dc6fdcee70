package telemetry

import (
	"sort"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	stats "istio.io/api/envoy/extensions/stats"
	meshconfig "istio.io/api/mesh/v1alpha1"
	tpb "istio.io/api/telemetry/v1alpha1"

	"github.com/meshplane/istiod/pkg/protoconv"
)

// StatsFilterName is Istio's stats filter (HTTP and network).
const StatsFilterName = "istio.stats"

// Class is the kind of listener telemetry is built for.
type Class int

// Listener classes.
const (
	SidecarOutbound Class = iota
	SidecarInbound
	Gateway
)

// Mode is the Telemetry mode of a listener class.
func (c Class) Mode() Mode {
	if c == SidecarInbound {
		return Server
	}
	return Client
}

type metricOverride struct {
	name     string
	disabled bool
	tags     []tagOverride
}

type tagOverride struct {
	name   string
	remove bool
	value  string
}

type modeMetrics struct {
	disabled  bool
	overrides []metricOverride
}

type providerMetrics struct {
	client, server modeMetrics
	interval       *durationpb.Duration
	from           string
}

// allIstioMetrics are the standard metrics ALL_METRICS stands for, sorted.
var allIstioMetrics = func() []string {
	var out []string
	for name, v := range tpb.MetricSelector_IstioMetric_value {
		if v != int32(tpb.MetricSelector_ALL_METRICS) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}()

func isAllMetrics(m *tpb.MetricSelector) bool {
	switch x := m.GetMetricMatch().(type) {
	case *tpb.MetricSelector_CustomMetric:
		return false
	case *tpb.MetricSelector_Metric:
		return x.Metric == tpb.MetricSelector_ALL_METRICS
	}
	return true
}

func metricNames(m *tpb.MetricSelector) []string {
	switch x := m.GetMetricMatch().(type) {
	case *tpb.MetricSelector_CustomMetric:
		return []string{x.CustomMetric}
	case *tpb.MetricSelector_Metric:
		if x.Metric != tpb.MetricSelector_ALL_METRICS {
			return []string{x.Metric.String()}
		}
	}
	return allIstioMetrics
}

func modesOf(m tpb.WorkloadMode) []tpb.WorkloadMode {
	if m == tpb.WorkloadMode_CLIENT || m == tpb.WorkloadMode_SERVER {
		return []tpb.WorkloadMode{m}
	}
	return []tpb.WorkloadMode{tpb.WorkloadMode_CLIENT, tpb.WorkloadMode_SERVER}
}

type override struct {
	disabled *wrapperspb.BoolValue
	tags     map[string]*tpb.MetricsOverrides_TagOverride
}

// metrics merges the metrics of every level, per provider, as Istio does:
// providers named by the most specific level that names any are in scope;
// overrides apply in order, later ones on top; disabling ALL_METRICS of a
// mode drops the filter of that mode until a later override re-enables it.
func (c *Computed) mergedMetrics() map[string]providerMetrics {
	defaults := c.mesh.GetDefaultProviders().GetMetrics()
	byProvider := map[string]map[tpb.WorkloadMode]map[string]override{}
	if len(c.metrics) == 0 {
		for _, d := range defaults {
			byProvider[d] = map[tpb.WorkloadMode]map[string]override{}
		}
	}
	inScope := map[string]bool{}
	scope := defaults
	for _, m := range c.metrics {
		if names := providerNames(m.Providers); len(names) > 0 {
			scope = names
		}
	}
	for _, n := range scope {
		inScope[n] = true
	}
	parent := defaults
	disabledAll := map[string]bool{}
	intervals := map[string]*durationpb.Duration{}
	from := map[string]string{}
	for i, m := range c.metrics {
		names := providerNames(m.Providers)
		if len(names) == 0 {
			names = parent
		}
		parent = names
		for _, p := range names {
			if !inScope[p] {
				continue
			}
			if m.GetReportingInterval() != nil {
				intervals[p] = m.GetReportingInterval()
			}
			if byProvider[p] == nil {
				byProvider[p] = map[tpb.WorkloadMode]map[string]override{tpb.WorkloadMode_CLIENT: {}, tpb.WorkloadMode_SERVER: {}}
			}
			from[p] = c.metSrc[i]
			applyOverrides(byProvider[p], m.Overrides, p, disabledAll)
		}
	}
	out := map[string]providerMetrics{}
	for p, modes := range byProvider {
		pm := providerMetrics{interval: intervals[p], from: from[p]}
		for mode, ms := range modes {
			mm := modeMetrics{disabled: disabledAll[p+"/"+mode.String()]}
			if !mm.disabled {
				mm.overrides = flatten(ms)
			}
			if mode == tpb.WorkloadMode_CLIENT {
				pm.client = mm
			} else {
				pm.server = mm
			}
		}
		out[p] = pm
	}
	return out
}

func applyOverrides(modes map[tpb.WorkloadMode]map[string]override, os []*tpb.MetricsOverrides, provider string, disabledAll map[string]bool) {
	for _, o := range os {
		if isAllMetrics(o.GetMatch()) && o.GetDisabled().GetValue() {
			for _, mode := range modesOf(o.GetMatch().GetMode()) {
				disabledAll[provider+"/"+mode.String()] = true
			}
			continue
		}
		for _, mode := range modesOf(o.GetMatch().GetMode()) {
			delete(disabledAll, provider+"/"+mode.String())
			if modes[mode] == nil {
				modes[mode] = map[string]override{}
			}
			for _, name := range metricNames(o.GetMatch()) {
				ov := modes[mode][name]
				if o.Disabled != nil {
					ov.disabled = o.Disabled
				}
				for k, v := range o.TagOverrides {
					if ov.tags == nil {
						ov.tags = map[string]*tpb.MetricsOverrides_TagOverride{}
					}
					ov.tags[k] = v
				}
				modes[mode][name] = ov
			}
		}
	}
}

func flatten(ms map[string]override) []metricOverride {
	out := make([]metricOverride, 0, len(ms))
	for name, ov := range ms {
		mo := metricOverride{name: name, disabled: ov.disabled.GetValue()}
		for k, v := range ov.tags {
			t := tagOverride{name: k}
			if v.Operation == tpb.MetricsOverrides_TagOverride_REMOVE {
				t.remove = true
			} else {
				t.value = v.GetValue()
			}
			mo.tags = append(mo.tags, t)
		}
		sort.Slice(mo.tags, func(i, j int) bool { return mo.tags[i].name < mo.tags[j].name })
		out = append(out, mo)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// prometheusNames are the Prometheus names of Istio's standard metrics.
var prometheusNames = map[string]string{
	"REQUEST_COUNT":          "requests_total",
	"REQUEST_DURATION":       "request_duration_milliseconds",
	"REQUEST_SIZE":           "request_bytes",
	"RESPONSE_SIZE":          "response_bytes",
	"TCP_OPENED_CONNECTIONS": "tcp_connections_opened_total",
	"TCP_CLOSED_CONNECTIONS": "tcp_connections_closed_total",
	"TCP_SENT_BYTES":         "tcp_sent_bytes_total",
	"TCP_RECEIVED_BYTES":     "tcp_received_bytes_total",
	"GRPC_REQUEST_MESSAGES":  "request_messages_total",
	"GRPC_RESPONSE_MESSAGES": "response_messages_total",
}

// statsConfigs are the istio.stats configs of a class, one per Prometheus
// provider in effect (sorted by provider name); none when metrics are off.
func (c *Computed) statsConfigs(class Class) []*anypb.Any {
	var names []string
	pms := c.mergedMetrics()
	for n := range pms {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*anypb.Any
	for _, n := range names {
		p := Provider(c.mesh, n)
		if _, prom := p.GetProvider().(*meshconfig.MeshConfig_ExtensionProvider_Prometheus); !prom {
			continue
		}
		pm := pms[n]
		mm := pm.client
		if class == SidecarInbound {
			mm = pm.server
		}
		if mm.disabled {
			continue
		}
		cfg := &stats.PluginConfig{DisableHostHeaderFallback: class != SidecarOutbound, TcpReportingDuration: pm.interval}
		for _, o := range mm.overrides {
			name, std := prometheusNames[o.name]
			if !std {
				name = o.name
			}
			mc := &stats.MetricConfig{Name: name, Dimensions: map[string]string{}, Drop: o.disabled}
			for _, t := range o.tags {
				if t.remove {
					mc.TagsToRemove = append(mc.TagsToRemove, t.name)
				} else {
					mc.Dimensions[t.name] = t.value
				}
			}
			cfg.Metrics = append(cfg.Metrics, mc)
		}
		out = append(out, protoconv.MessageToAny(cfg))
	}
	return out
}

// HTTPStats are the istio.stats HTTP filters of a class (they go right
// before the router).
func (c *Computed) HTTPStats(class Class) []*hcm.HttpFilter {
	var out []*hcm.HttpFilter
	for _, a := range c.statsConfigs(class) {
		out = append(out, &hcm.HttpFilter{Name: StatsFilterName, ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: a}})
	}
	return out
}

// TCPStats are the istio.stats network filters of a class (they go right
// before the TCP proxy).
func (c *Computed) TCPStats(class Class) []*listenerv3.Filter {
	var out []*listenerv3.Filter
	for _, a := range c.statsConfigs(class) {
		out = append(out, &listenerv3.Filter{Name: StatsFilterName, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: a}})
	}
	return out
}

// MetricsReport is one metrics provider in effect for a class.
type MetricsReport struct {
	Provider string `json:"provider"`
	// Disabled: ALL_METRICS are disabled for the class.
	Disabled bool `json:"disabled,omitempty"`
	// Overrides are "<metric>: drop", "<metric>: tag=value", "<metric>:
	// -tag" entries.
	Overrides []string `json:"overrides,omitempty"`
	// From names the Telemetry that last set it ("" for defaultProviders).
	From string `json:"from,omitempty"`
}

// Metrics explains the metrics providers of a class, sorted.
func (c *Computed) Metrics(class Class) []MetricsReport {
	var out []MetricsReport
	for name, pm := range c.mergedMetrics() {
		mm := pm.client
		if class == SidecarInbound {
			mm = pm.server
		}
		r := MetricsReport{Provider: name, Disabled: mm.disabled, From: pm.from}
		for _, o := range mm.overrides {
			if o.disabled {
				r.Overrides = append(r.Overrides, o.name+": drop")
			}
			for _, t := range o.tags {
				if t.remove {
					r.Overrides = append(r.Overrides, o.name+": -"+t.name)
				} else {
					r.Overrides = append(r.Overrides, o.name+": "+t.name+"="+t.value)
				}
			}
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Provider < out[j].Provider })
	return out
}
