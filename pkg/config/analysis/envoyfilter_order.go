package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
	typev1beta1 "istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
)

// defaultRootNamespace is the mesh config's default rootNamespace, used
// when the mesh config given leaves it unset.
const defaultRootNamespace = "istio-system"

const (
	gatewayGroup     = "gateway.networking.k8s.io"
	gatewayNameLabel = "gateway.networking.k8s.io/gateway-name"
	waypointClass    = "istio-waypoint"
	istioGroup       = "networking.istio.io"
	// msgEnvoyFilterOrder explains MP0004.
	msgEnvoyFilterOrder = "Istio applies a proxy's EnvoyFilters in the order of their priority across the root " +
		"and the workload namespace (at equal priority the root namespace's first, then by creation time, then " +
		"by name), not the root namespace's first as the EnvoyFilter reference reads"
)

// EnvoyFilters checks EnvoyFilter resources:
//   - MP0004 (ours): a pair of EnvoyFilters, one of the root namespace
//     and one of a workload namespace, whose order Istio's documentation
//     and Istio's code disagree on. The reference says the root
//     namespace's filters are applied first, then the workload
//     namespace's, each by priority; Istio 1.31 (PushContext.EnvoyFilters)
//     sorts them together by priority and puts the root namespace first
//     only at equal priority. The two differ exactly when the workload
//     filter has the lower priority: Istio (and istiod here) applies it
//     first. A pair is reported when both filters can select one proxy
//     (compatible workload selectors; a workload filter attached to a
//     Gateway with targetRefs and a root filter whose selector admits its
//     pods; a root filter attached to the istio-waypoint GatewayClass and
//     a workload filter attached to a waypoint) and they have patches of
//     one applyTo in contexts that meet (otherwise their order changes
//     nothing). It is reported on the workload filter, naming both and
//     the proxies concerned. The root namespace is the mesh config's
//     (istio-system when unset).
func EnvoyFilters(cfgs []config.Config, mesh *meshconfig.MeshConfig) []Message {
	root := mesh.GetRootNamespace()
	if root == "" {
		root = defaultRootNamespace
	}
	var roots, workloads []config.Config
	for _, c := range cfgs {
		if _, ok := c.Spec.(*networking.EnvoyFilter); !ok {
			continue
		}
		if c.Namespace == root {
			roots = append(roots, c)
		} else {
			workloads = append(workloads, c)
		}
	}
	byName := func(a, b config.Config) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	}
	slices.SortFunc(roots, byName)
	slices.SortFunc(workloads, byName)
	var out []Message
	for _, w := range workloads {
		ws := w.Spec.(*networking.EnvoyFilter)
		for _, r := range roots {
			rs := r.Spec.(*networking.EnvoyFilter)
			if ws.GetPriority() >= rs.GetPriority() || !patchesMeet(rs, ws) {
				continue
			}
			scopes := commonProxies(rs, ws, w.Namespace)
			if len(scopes) == 0 {
				continue
			}
			out = append(out, Message{Code: CodeEnvoyFilterOrder, Level: "Warning", Kind: "EnvoyFilter", Namespace: w.Namespace, Name: w.Name,
				Text: fmt.Sprintf("EnvoyFilter %s/%s (priority %d) is applied before %s/%s of the root namespace (priority %d) on %s: %s; "+
					"give both the same priority to have %s/%s applied first",
					w.Namespace, w.Name, ws.GetPriority(), r.Namespace, r.Name, rs.GetPriority(), strings.Join(scopes, " and "),
					msgEnvoyFilterOrder, r.Namespace, r.Name)})
		}
	}
	return out
}

// patchesMeet tells whether two filters have patches of one applyTo whose
// match contexts meet (equal, or one of them ANY).
func patchesMeet(a, b *networking.EnvoyFilter) bool {
	for _, pa := range a.GetConfigPatches() {
		for _, pb := range b.GetConfigPatches() {
			if pa.GetApplyTo() != pb.GetApplyTo() {
				continue
			}
			ca, cb := pa.GetMatch().GetContext(), pb.GetMatch().GetContext()
			if ca == cb || ca == networking.EnvoyFilter_ANY || cb == networking.EnvoyFilter_ANY {
				return true
			}
		}
	}
	return false
}

// commonProxies describes the proxies of namespace ns that both the root
// filter r and the workload filter w (of ns) select, as Istio's policy
// matcher attaches EnvoyFilters; none when no proxy can take both.
func commonProxies(r, w *networking.EnvoyFilter, ns string) []string {
	rRefs, wRefs := r.GetTargetRefs(), w.GetTargetRefs()
	rSel, wSel := r.GetWorkloadSelector().GetLabels(), w.GetWorkloadSelector().GetLabels()
	var out []string
	switch {
	case len(rRefs) == 0 && len(wRefs) == 0:
		if labels, ok := mergeLabels(rSel, wSel); ok {
			s := fmt.Sprintf("the workloads of namespace %q", ns)
			if len(labels) > 0 {
				s += " with labels " + labelsString(labels)
			}
			out = append(out, s)
		}
	case len(rRefs) == 0:
		// a Gateway API gateway's pods take selector-based filters too
		// (not a waypoint's)
		for _, ref := range wRefs {
			if isRef(ref, gatewayGroup, "Gateway", ns) {
				if _, ok := mergeLabels(rSel, map[string]string{gatewayNameLabel: ref.GetName()}); ok {
					out = append(out, fmt.Sprintf("the proxies of Gateway %s/%s (unless it is a waypoint)", ns, ref.GetName()))
				}
			}
		}
	case len(wRefs) > 0 && slices.ContainsFunc(rRefs, func(ref *typev1beta1.PolicyTargetReference) bool {
		return isRef(ref, gatewayGroup, "GatewayClass", "") && ref.GetName() == waypointClass
	}):
		for _, ref := range wRefs {
			switch {
			case isRef(ref, gatewayGroup, "Gateway", ns):
				out = append(out, fmt.Sprintf("the proxies of Gateway %s/%s (if it is a waypoint)", ns, ref.GetName()))
			case isRef(ref, "", "Service", ns):
				out = append(out, fmt.Sprintf("the waypoint of Service %s/%s", ns, ref.GetName()))
			case isRef(ref, istioGroup, "ServiceEntry", ns):
				out = append(out, fmt.Sprintf("the waypoint of ServiceEntry %s/%s", ns, ref.GetName()))
			}
		}
	}
	return slices.Compact(out)
}

// isRef tells a targetRef of that group and kind; ns, when set, is the
// only namespace it may name (an empty one is the policy's).
func isRef(ref *typev1beta1.PolicyTargetReference, group, kind, ns string) bool {
	g := ref.GetGroup()
	if g == "core" {
		g = ""
	}
	return g == group && ref.GetKind() == kind && (ns == "" || ref.GetNamespace() == "" || ref.GetNamespace() == ns)
}

// mergeLabels is the union of two selectors, or false when they require
// different values of one label (no workload has both).
func mergeLabels(a, b map[string]string) (map[string]string, bool) {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if o, ok := out[k]; ok && o != v {
			return nil, false
		}
		out[k] = v
	}
	return out, true
}

func labelsString(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}
