package telemetry

import (
	"sort"
	"strings"

	meshconfig "istio.io/api/mesh/v1alpha1"
	tpb "istio.io/api/telemetry/v1alpha1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
)

// Mode is the side of the traffic a listener serves, as Telemetry's
// match.mode names it: CLIENT for outbound (and gateways), SERVER for
// inbound.
type Mode = tpb.WorkloadMode

// The two modes.
const (
	Client = tpb.WorkloadMode_CLIENT
	Server = tpb.WorkloadMode_SERVER
)

// Computed is the Telemetry that applies to one proxy: its root, namespace
// and workload Telemetry resources merged as Istio 1.31 merges them. A
// field a level sets replaces the parent's whole field; what a level does
// not set is inherited — so a provider disabled above stays disabled
// until a level says disabled: false for it.
type Computed struct {
	mesh    *meshconfig.MeshConfig
	layers  []*config.Config // root, namespace, workload: those present
	logging [][]*tpb.AccessLogging
	logSrc  []string // the Telemetry of each logging level
	tracing []*tpb.Tracing
	tracSrc []string
	metrics []*tpb.Metrics
	metSrc  []string
}

// Compute merges the Telemetry resources of a proxy (nil layers absent).
func Compute(l model.LayeredPolicies, mesh *meshconfig.MeshConfig) *Computed {
	c := &Computed{mesh: mesh}
	for _, cfg := range []*config.Config{l.Root, l.Namespace, l.Workload} {
		if cfg == nil {
			continue
		}
		spec, ok := cfg.Spec.(*tpb.Telemetry)
		if !ok {
			continue
		}
		c.layers = append(c.layers, cfg)
		src := cfg.Namespace + "/" + cfg.Name
		if len(spec.AccessLogging) > 0 {
			c.logging = append(c.logging, spec.AccessLogging)
			c.logSrc = append(c.logSrc, src)
		}
		for _, t := range spec.Tracing {
			c.tracing = append(c.tracing, t)
			c.tracSrc = append(c.tracSrc, src)
		}
		for _, m := range spec.Metrics {
			c.metrics = append(c.metrics, m)
			c.metSrc = append(c.metSrc, src)
		}
	}
	return c
}

// Key names the Telemetry resources merged: proxies with the same key get
// the same telemetry (the mesh config aside).
func (c *Computed) Key() string {
	var b strings.Builder
	for _, cfg := range c.layers {
		b.WriteString(cfg.Namespace + "/" + cfg.Name + ";")
	}
	return b.String()
}

// Sources names, per layer, the Telemetry resources merged (for the debug
// report): "namespace/name".
func (c *Computed) Sources() []string {
	out := make([]string, 0, len(c.layers))
	for _, cfg := range c.layers {
		out = append(out, cfg.Namespace+"/"+cfg.Name)
	}
	return out
}

// Provider finds a mesh extension provider by name (case-insensitively, as
// Istio), nil when there is none.
func Provider(mesh *meshconfig.MeshConfig, name string) *meshconfig.MeshConfig_ExtensionProvider {
	for _, p := range mesh.GetExtensionProviders() {
		if strings.EqualFold(p.Name, name) {
			return p
		}
	}
	return nil
}

func providerNames(refs []*tpb.ProviderRef) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.GetName())
	}
	return out
}

// LogSpec is one access-log provider in effect for a mode.
type LogSpec struct {
	Provider *meshconfig.MeshConfig_ExtensionProvider
	Filter   *tpb.AccessLogging_Filter
	Disabled bool
	// From names the Telemetry that decided it ("" for the mesh's
	// defaultProviders).
	From string
}

// Logging returns the access-log providers of a mode, sorted by name, and
// whether Telemetry (or the mesh's default providers) configures logging
// at all — when not, the mesh config's accessLogFile applies.
func (c *Computed) Logging(mode Mode) ([]LogSpec, bool) {
	defaults := c.mesh.GetDefaultProviders().GetAccessLogging()
	if len(c.logging) == 0 && len(defaults) == 0 {
		return nil, false
	}
	merged := mergeLogs(c.logging, c.logSrc, defaults, mode)
	var out []LogSpec
	for name, s := range merged {
		p := Provider(c.mesh, name)
		if p == nil {
			continue
		}
		out = append(out, LogSpec{Provider: p, Filter: s.Filter, Disabled: s.Disabled, From: s.From})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Provider.Name < out[j].Provider.Name })
	return out, true
}

type logState struct {
	Filter   *tpb.AccessLogging_Filter
	Disabled bool
	From     string
}

func matchesMode(sel *tpb.AccessLogging_LogSelector, mode Mode) bool {
	return sel == nil || sel.Mode == tpb.WorkloadMode_CLIENT_AND_SERVER || sel.Mode == mode
}

// mergeLogs follows Istio: the providers in scope are those of the most
// specific level that names any (for the mode), else the defaults; then,
// level by level, each entry sets its providers (or its parent's when it
// names none) to its filter, or to disabled.
func mergeLogs(levels [][]*tpb.AccessLogging, srcs []string, defaults []string, mode Mode) map[string]logState {
	out := map[string]logState{}
	if len(levels) == 0 {
		for _, d := range defaults {
			out[d] = logState{}
		}
		return out
	}
	inScope := append([]string(nil), defaults...)
	filters := map[string]*tpb.AccessLogging_Filter{}
	for _, level := range levels {
		var names []string
		for _, e := range level {
			if !matchesMode(e.Match, mode) {
				continue
			}
			for _, n := range providerNames(e.Providers) {
				names = append(names, n)
				filters[n] = e.Filter
			}
		}
		if len(names) > 0 {
			inScope = names
		}
	}
	scope := map[string]bool{}
	for _, n := range inScope {
		scope[n] = true
	}
	parent := defaults
	for i, level := range levels {
		for _, e := range level {
			names := providerNames(e.Providers)
			if len(names) == 0 {
				names = parent
			}
			parent = names
			if !matchesMode(e.Match, mode) {
				continue
			}
			for _, n := range names {
				if !scope[n] {
					continue
				}
				if e.GetDisabled().GetValue() {
					out[n] = logState{Disabled: true, From: srcs[i]}
					continue
				}
				out[n] = logState{Filter: filters[n], From: srcs[i]}
			}
		}
	}
	return out
}

// TracingSpec is the tracing of one mode.
type TracingSpec struct {
	// From names, per field set (provider, disableSpanReporting,
	// randomSamplingPercentage, customTags, ...), the Telemetry that set it.
	From                         map[string]string
	Provider                     *meshconfig.MeshConfig_ExtensionProvider
	Disabled                     bool
	RandomSamplingPercentage     *float64
	CustomTags                   map[string]*tpb.Tracing_CustomTag
	UseRequestIDForTraceSampling bool
	EnableIstioTags              bool
	DisableContextPropagation    bool
}

// Tracing returns the tracing of a mode, and whether Telemetry (or the
// mesh's default tracing provider) configures it — when not, the mesh
// config's enableTracing applies.
func (c *Computed) Tracing(mode Mode) (TracingSpec, bool) {
	defaults := c.mesh.GetDefaultProviders().GetTracing()
	if len(c.tracing) == 0 && len(defaults) == 0 {
		return TracingSpec{}, false
	}
	spec := TracingSpec{UseRequestIDForTraceSampling: true, EnableIstioTags: true, From: map[string]string{}}
	if len(defaults) > 0 {
		spec.Provider = Provider(c.mesh, defaults[0])
		spec.From["provider"] = "meshConfig.defaultProviders"
	}
	for i, t := range c.tracing {
		if t.Match != nil && t.Match.Mode != tpb.WorkloadMode_CLIENT_AND_SERVER && t.Match.Mode != mode {
			continue
		}
		src := c.tracSrc[i]
		if names := providerNames(t.Providers); len(names) > 0 {
			// one provider per mode: the first
			spec.Provider, spec.From["provider"] = Provider(c.mesh, names[0]), src
		}
		if t.DisableSpanReporting != nil {
			spec.Disabled, spec.From["disableSpanReporting"] = t.DisableSpanReporting.GetValue(), src
		}
		if t.CustomTags != nil {
			spec.CustomTags, spec.From["customTags"] = t.CustomTags, src
		}
		if t.RandomSamplingPercentage != nil {
			v := t.RandomSamplingPercentage.GetValue()
			spec.RandomSamplingPercentage, spec.From["randomSamplingPercentage"] = &v, src
		}
		if t.UseRequestIdForTraceSampling != nil {
			spec.UseRequestIDForTraceSampling, spec.From["useRequestIdForTraceSampling"] = t.UseRequestIdForTraceSampling.GetValue(), src
		}
		if t.EnableIstioTags != nil {
			spec.EnableIstioTags, spec.From["enableIstioTags"] = t.EnableIstioTags.GetValue(), src
		}
		if t.DisableContextPropagation != nil {
			spec.DisableContextPropagation, spec.From["disableContextPropagation"] = t.DisableContextPropagation.GetValue(), src
		}
	}
	if spec.Provider == nil {
		spec.Disabled = true
	}
	return spec, true
}

func sortStrings(s []string) { sort.Strings(s) }
