package generators

import (
	"sort"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
)

// TelemetryReport is /debug/telemetryz for one proxy: the Telemetry
// resources that apply to it and what they give each listener class.
type TelemetryReport struct {
	Proxy       string                 `json:"proxy"`
	PushVersion string                 `json:"pushVersion"`
	Telemetries []string               `json:"telemetries"`
	Classes     map[string]ClassReport `json:"classes"`
	Providers   []string               `json:"extensionProviders"`
	Fallback    map[string]string      `json:"meshConfigFallback,omitempty"`
}

// ClassReport is the telemetry of one listener class.
type ClassReport struct {
	// AccessLogs are the providers in effect ("<name>" or "<name>
	// (disabled)"), with the filter and the Telemetry that decided each.
	AccessLogs []LogReport `json:"accessLogs"`
	// Tracing is nil when no Telemetry (nor default provider) configures
	// tracing: the mesh config's enableTracing applies.
	Tracing *TracingReport            `json:"tracing,omitempty"`
	Metrics []telemetry.MetricsReport `json:"metrics"`
}

// LogReport is one access-log provider.
type LogReport struct {
	Provider string `json:"provider"`
	Disabled bool   `json:"disabled,omitempty"`
	Filter   string `json:"filter,omitempty"`
	From     string `json:"from,omitempty"`
}

// TracingReport is the tracing of a class.
type TracingReport struct {
	Provider       string            `json:"provider,omitempty"`
	Disabled       bool              `json:"disabled,omitempty"`
	RandomSampling *float64          `json:"randomSamplingPercentage,omitempty"`
	CustomTags     []string          `json:"customTags,omitempty"`
	From           map[string]string `json:"from,omitempty"`
}

// Telemetryz returns the source of /debug/telemetryz.
func (g *SidecarGenerators) Telemetryz(src ConnectedProxies) func(proxyID string) (any, bool) {
	return func(proxyID string) (any, bool) {
		for _, c := range src.Connections() {
			if p := c.Proxy(); p != nil && p.ID == proxyID {
				push := src.PushContext()
				if push == nil {
					return nil, true
				}
				return TelemetryReportFor(push, p), true
			}
		}
		return nil, false
	}
}

// TelemetryReportFor explains the telemetry of proxy in push.
func TelemetryReportFor(push *model.PushContext, proxy *model.Proxy) *TelemetryReport {
	tel := telemetry.Compute(push.Telemetry(proxy), push.Mesh)
	out := &TelemetryReport{Proxy: proxy.ID, PushVersion: push.PushVersion(), Telemetries: tel.Sources(), Classes: map[string]ClassReport{}}
	for _, p := range push.Mesh.GetExtensionProviders() {
		out.Providers = append(out.Providers, p.Name)
	}
	classes := map[string]telemetry.Class{"client": telemetry.SidecarOutbound, "server": telemetry.SidecarInbound}
	if proxy.Type == model.Router {
		classes = map[string]telemetry.Class{"gateway": telemetry.Gateway}
	}
	for name, class := range classes {
		cr := ClassReport{Metrics: tel.Metrics(class)}
		specs, logsSet := tel.Logging(class.Mode())
		for _, s := range specs {
			cr.AccessLogs = append(cr.AccessLogs, LogReport{Provider: s.Provider.Name, Disabled: s.Disabled,
				Filter: s.Filter.GetExpression(), From: s.From})
		}
		if !logsSet {
			if out.Fallback == nil {
				out.Fallback = map[string]string{}
			}
			out.Fallback["accessLogs"] = "no Telemetry configures access logging: meshConfig.accessLogFile " + quoteOrNone(push.Mesh.GetAccessLogFile())
		}
		if spec, ok := tel.Tracing(class.Mode()); ok {
			tr := &TracingReport{Disabled: spec.Disabled, RandomSampling: spec.RandomSamplingPercentage, From: spec.From}
			if spec.Provider != nil {
				tr.Provider = spec.Provider.Name
			}
			for k := range spec.CustomTags {
				tr.CustomTags = append(tr.CustomTags, k)
			}
			sort.Strings(tr.CustomTags)
			cr.Tracing = tr
		}
		out.Classes[name] = cr
	}
	return out
}

func quoteOrNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return `"` + s + `"`
}
