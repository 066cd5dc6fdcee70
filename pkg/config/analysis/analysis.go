package analysis

import (
	"fmt"
	"sort"
	"strings"

	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
	tpb "istio.io/api/telemetry/v1alpha1"

	"github.com/meshplane/istiod/pkg/config"
)

// Message is one finding about one object.
type Message struct {
	// Code is Istio's analyzer code (IST0111), or ours (MP....) where
	// Istio has no such check.
	Code  string
	Level string // Error, Warning, Info
	Kind  string
	// Namespace and Name of the object the message is about.
	Namespace, Name string
	Text            string
}

// String renders the message as istioctl analyze does in its log format.
func (m Message) String() string {
	return fmt.Sprintf("%s [%s] (%s %s/%s) %s", m.Level, m.Code, m.Kind, m.Namespace, m.Name, m.Text)
}

// Codes of our own checks.
const (
	// CodeEgressNotFirewall: a Sidecar narrows egress while unknown
	// destinations still pass through (ALLOW_ANY).
	CodeEgressNotFirewall = "MP0001"
	// CodeUnknownProvider: a Telemetry names a provider the mesh config
	// does not define; Istio silently ignores it.
	CodeUnknownProvider = "MP0002"
	// CodeReenableNoEffect: a Telemetry entry sets disabled: false with no
	// provider to re-enable.
	CodeReenableNoEffect = "MP0003"
	// CodeEnvoyFilterOrder: a workload namespace EnvoyFilter with a lower
	// priority than a root namespace one that patches the same proxies:
	// Istio applies it first, its documentation says after.
	CodeEnvoyFilterOrder = "MP0004"
)

// Analyze runs every check over the objects (any kinds; others are
// ignored), sorted by kind, namespace, name and code.
func Analyze(cfgs []config.Config, mesh *meshconfig.MeshConfig) []Message {
	var sidecars, telemetries, envoyFilters []config.Config
	for _, c := range cfgs {
		switch c.Spec.(type) {
		case *networking.Sidecar:
			sidecars = append(sidecars, c)
		case *tpb.Telemetry:
			telemetries = append(telemetries, c)
		case *networking.EnvoyFilter:
			envoyFilters = append(envoyFilters, c)
		}
	}
	out := append(Sidecars(sidecars, mesh), Telemetries(telemetries, mesh)...)
	out = append(out, EnvoyFilters(envoyFilters, mesh)...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Code < b.Code
	})
	return out
}

// withoutSelector groups, per namespace, the names of objects without a
// workload selector (and, for Telemetry, without targetRefs).
func withoutSelector(cfgs []config.Config, noSelector func(config.Config) bool) map[string][]string {
	out := map[string][]string{}
	for _, c := range cfgs {
		if noSelector(c) {
			out[c.Namespace] = append(out[c.Namespace], c.Name)
		}
	}
	for _, l := range out {
		sort.Strings(l)
	}
	return out
}

// namesList renders names as istioctl's %v of a []string does: [a b].
func namesList(names []string) string { return "[" + strings.Join(names, " ") + "]" }

// Sidecars checks Sidecar resources:
//   - IST0111: more than one Sidecar of a namespace without a workload
//     selector (which one applies is undefined);
//   - MP0001 (ours): a Sidecar whose egress narrows what the proxy sees
//     while its outbound traffic policy (its own, else the mesh's) is
//     ALLOW_ANY — unlisted destinations still pass through the
//     PassthroughCluster, so the narrowing is no firewall.
func Sidecars(cfgs []config.Config, mesh *meshconfig.MeshConfig) []Message {
	var out []Message
	groups := withoutSelector(cfgs, func(c config.Config) bool {
		return len(c.Spec.(*networking.Sidecar).GetWorkloadSelector().GetLabels()) == 0
	})
	for _, c := range cfgs {
		spec := c.Spec.(*networking.Sidecar)
		if names := groups[c.Namespace]; len(names) > 1 && len(spec.GetWorkloadSelector().GetLabels()) == 0 {
			out = append(out, Message{Code: "IST0111", Level: "Error", Kind: "Sidecar", Namespace: c.Namespace, Name: c.Name,
				Text: fmt.Sprintf("The Sidecars %s in namespace %q have no workload selector, which can lead to undefined behavior.", namesList(names), c.Namespace)})
		}
		if narrowsEgress(spec) && allowAny(spec, mesh) {
			out = append(out, Message{Code: CodeEgressNotFirewall, Level: "Warning", Kind: "Sidecar", Namespace: c.Namespace, Name: c.Name,
				Text: "Sidecar egress is not a firewall: unlisted destinations still pass through (outboundTrafficPolicy is ALLOW_ANY); set outboundTrafficPolicy.mode REGISTRY_ONLY to block them"})
		}
	}
	return out
}

// narrowsEgress tells a Sidecar whose egress hosts do not import every
// service of every namespace.
func narrowsEgress(s *networking.Sidecar) bool {
	if len(s.GetEgress()) == 0 {
		return false
	}
	for _, l := range s.GetEgress() {
		for _, h := range l.GetHosts() {
			if h == "*/*" {
				return false
			}
		}
	}
	return true
}

func allowAny(s *networking.Sidecar, mesh *meshconfig.MeshConfig) bool {
	if p := s.GetOutboundTrafficPolicy(); p != nil {
		return p.GetMode() == networking.OutboundTrafficPolicy_ALLOW_ANY
	}
	if mesh.GetOutboundTrafficPolicy() == nil {
		return true // the mesh default
	}
	return mesh.GetOutboundTrafficPolicy().GetMode() == meshconfig.MeshConfig_OutboundTrafficPolicy_ALLOW_ANY
}

// Telemetries checks Telemetry resources:
//   - IST0160: more than one Telemetry of a namespace without a selector
//     or targetRefs;
//   - MP0002 (ours): a provider name the mesh config's extensionProviders
//     do not define (Istio ignores it without a word);
//   - MP0003 (ours): an accessLogging or tracing entry that sets disabled:
//     false (disableSpanReporting: false) while neither it nor the mesh's
//     default providers name a provider — it re-enables nothing. Istio's
//     IST0157 flags every entry without providers, including the
//     documented re-enable idiom that does work; we do not.
func Telemetries(cfgs []config.Config, mesh *meshconfig.MeshConfig) []Message {
	var out []Message
	groups := withoutSelector(cfgs, func(c config.Config) bool {
		t := c.Spec.(*tpb.Telemetry)
		return len(t.GetSelector().GetMatchLabels()) == 0 && t.GetTargetRef() == nil && len(t.GetTargetRefs()) == 0
	})
	defined := map[string]bool{}
	for _, p := range mesh.GetExtensionProviders() {
		defined[strings.ToLower(p.GetName())] = true
	}
	for _, c := range cfgs {
		t := c.Spec.(*tpb.Telemetry)
		msg := func(code, level, text string) {
			out = append(out, Message{Code: code, Level: level, Kind: "Telemetry", Namespace: c.Namespace, Name: c.Name, Text: text})
		}
		if names := groups[c.Namespace]; len(names) > 1 && len(t.GetSelector().GetMatchLabels()) == 0 && t.GetTargetRef() == nil && len(t.GetTargetRefs()) == 0 {
			msg("IST0160", "Error", fmt.Sprintf("The Telemetries %s in namespace %q have no workload selector, which can lead to undefined behavior.", namesList(names), c.Namespace))
		}
		for _, u := range unknownProviders(t, defined) {
			msg(CodeUnknownProvider, "Warning", fmt.Sprintf("provider %q is not defined in meshConfig.extensionProviders: Istio ignores it", u))
		}
		for i, l := range t.GetAccessLogging() {
			if l.GetDisabled() != nil && !l.GetDisabled().GetValue() && len(l.GetProviders()) == 0 && len(mesh.GetDefaultProviders().GetAccessLogging()) == 0 &&
				!anyAccessLogProviders(cfgs, c) {
				msg(CodeReenableNoEffect, "Warning", fmt.Sprintf("spec.accessLogging[%d]: disabled: false re-enables nothing: no provider is named here, by a broader Telemetry, or in meshConfig.defaultProviders", i))
			}
		}
	}
	return out
}

func unknownProviders(t *tpb.Telemetry, defined map[string]bool) []string {
	var refs []*tpb.ProviderRef
	for _, l := range t.GetAccessLogging() {
		refs = append(refs, l.GetProviders()...)
	}
	for _, tr := range t.GetTracing() {
		refs = append(refs, tr.GetProviders()...)
	}
	for _, m := range t.GetMetrics() {
		refs = append(refs, m.GetProviders()...)
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range refs {
		n := r.GetName()
		if n == "" || defined[strings.ToLower(n)] || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}

// anyAccessLogProviders tells whether a Telemetry other than c names an
// access-log provider (a broader level c may inherit from).
func anyAccessLogProviders(cfgs []config.Config, c config.Config) bool {
	for _, o := range cfgs {
		if o.Namespace == c.Namespace && o.Name == c.Name {
			continue
		}
		for _, l := range o.Spec.(*tpb.Telemetry).GetAccessLogging() {
			if len(l.GetProviders()) > 0 {
				return true
			}
		}
	}
	return false
}
