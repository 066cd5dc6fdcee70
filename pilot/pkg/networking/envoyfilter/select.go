package envoyfilter

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// Patches are the patches that apply to one proxy, in the order they are
// applied. A nil *Patches applies nothing. Patches are read-only and may
// be shared by every proxy with the same Key.
type Patches struct {
	gateway bool
	// selected: some EnvoyFilter selects the proxy. Istio then runs its
	// listener patching even when no patch is left, which drops filter
	// chains without filters (see dropEmptyChains).
	selected bool
	all      []*patch
	// byContext[c][a]: the patches of applyTo a whose match context is c
	// or ANY, for c the contexts resources are patched in.
	byContext [numContexts][numApplyTo][]*patch
	key       string
}

const (
	numContexts = int(networking.EnvoyFilter_WAYPOINT) + 1
	numApplyTo  = int(networking.EnvoyFilter_LISTENER_FILTER) + 1
)

// Key identifies the patch set: two proxies with the same Key get the same
// result from the same resources and PatchContext. It is "" when nothing
// applies (Empty).
func (p *Patches) Key() string {
	if p == nil {
		return ""
	}
	return p.key
}

// Empty reports whether patching changes nothing at all (no EnvoyFilter
// selects the proxy).
func (p *Patches) Empty() bool { return p == nil || !p.selected }

// Len is the number of patches.
func (p *Patches) Len() int {
	if p == nil {
		return 0
	}
	return len(p.all)
}

// list returns the patches of applyTo that apply in ctx (patches of that
// context and of ANY), in order. The slice is shared.
func (p *Patches) list(ctx networking.EnvoyFilter_PatchContext, applyTo networking.EnvoyFilter_ApplyTo) []*patch {
	if p == nil || int(ctx) >= numContexts || int(applyTo) >= numApplyTo {
		return nil
	}
	return p.byContext[ctx][applyTo]
}

// gatewayNameLabel names the Gateway API Gateway a gateway pod serves.
const gatewayNameLabel = "gateway.networking.k8s.io/gateway-name"

// waypointClass is the GatewayClass of Istio's waypoints.
const waypointClass = "istio-waypoint"

// Select returns the patches of filters (the EnvoyFilters of the root
// namespace and of the proxy's namespace, in any order; others are
// ignored) that apply to proxy, in Istio 1.31's order.
func Select(proxy *model.Proxy, rootNamespace string, filters []*Filter) *Patches {
	if proxy == nil {
		return nil
	}
	var chosen []*Filter
	for _, f := range filters {
		if f == nil || (f.Namespace != rootNamespace && f.Namespace != proxy.ConfigNamespace) {
			continue
		}
		if selects(f, proxy, rootNamespace) {
			chosen = append(chosen, f)
		}
	}
	if len(chosen) == 0 {
		return nil
	}
	slices.SortStableFunc(chosen, func(a, b *Filter) int { return order(a, b, rootNamespace) })
	chosen = slices.CompactFunc(chosen, func(a, b *Filter) bool { return a == b })
	out := &Patches{gateway: proxy.Type == model.Router, selected: true}
	h := sha256.New()
	if out.gateway {
		h.Write([]byte{1})
	}
	var idx [8]byte
	for _, f := range chosen {
		for _, p := range f.patches {
			if !proxyMatches(proxy, p) {
				continue
			}
			out.all = append(out.all, p)
			h.Write(f.fingerprint[:])
			binary.BigEndian.PutUint64(idx[:], uint64(p.index))
			h.Write(idx[:])
			for c := range numContexts {
				ctx := networking.EnvoyFilter_PatchContext(c)
				if p.match.GetContext() == ctx || p.match.GetContext() == networking.EnvoyFilter_ANY {
					out.byContext[c][p.applyTo] = append(out.byContext[c][p.applyTo], p)
				}
			}
		}
	}
	out.key = hex.EncodeToString(h.Sum(nil)[:16])
	return out
}

// order is the order of the EnvoyFilters of one proxy as Istio 1.31's
// PushContext.EnvoyFilters sorts them (one list of the root namespace's
// and the proxy namespace's filters): priority ascending across both
// namespaces; at equal priority a root namespace filter before a
// workload namespace one; then creation time; then "name.namespace".
// The EnvoyFilter reference (and spec 003 §4.1) reads "the root
// namespace first, then the workload namespace", which differs when a
// workload filter has a lower priority than a root one: it runs first
// here, as in Istio (pkg/config/analysis warns about such pairs, MP0004).
func order(a, b *Filter, rootNamespace string) int {
	if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
		return c
	}
	if a.Namespace != b.Namespace && (a.Namespace == rootNamespace || b.Namespace == rootNamespace) {
		if a.Namespace == rootNamespace {
			return -1
		}
		return 1
	}
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return strings.Compare(a.Name+"."+a.Namespace, b.Name+"."+b.Namespace)
}

// selects reports whether the filter attaches to the proxy, as Istio's
// policy matcher decides for EnvoyFilters: a proxy that is no Gateway API
// gateway takes filters by workloadSelector (none: every workload of the
// namespace) and ignores filters with targetRefs; a Gateway API gateway
// takes the filters of its namespace whose targetRefs name its Gateway,
// and those without targetRefs by workloadSelector, except a waypoint,
// which takes no selector-based filter.
func selects(f *Filter, proxy *model.Proxy, rootNamespace string) bool {
	gw, isGateway := proxy.Labels[gatewayNameLabel]
	if !isGateway {
		return len(f.targetRefs) == 0 && subset(f.selector, proxy.Labels)
	}
	if len(f.targetRefs) == 0 {
		return proxy.Type != model.Waypoint && subset(f.selector, proxy.Labels)
	}
	for _, r := range f.targetRefs {
		const gatewayGroup = "gateway.networking.k8s.io"
		if proxy.Type == model.Waypoint && f.Namespace == rootNamespace && r.GetGroup() == gatewayGroup &&
			r.GetKind() == "GatewayClass" && r.GetName() == waypointClass {
			return true
		}
		if proxy.ConfigNamespace != f.Namespace || (r.GetNamespace() != "" && r.GetNamespace() != proxy.ConfigNamespace) {
			continue
		}
		if r.GetGroup() == gatewayGroup && r.GetKind() == "Gateway" && r.GetName() == gw {
			return true
		}
	}
	return false
}

func subset(selector, labels map[string]string) bool {
	for k, v := range selector {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	return true
}

// proxyMatches checks a patch's proxy match: the proxy version regex
// against ISTIO_VERSION (a proxy without a version does not match one) and
// each metadata key for the exact value.
func proxyMatches(proxy *model.Proxy, p *patch) bool {
	pm := p.match.GetProxy()
	if pm == nil {
		return true
	}
	if p.noVersion {
		return false
	}
	var md *model.NodeMetadata
	if proxy.Metadata != nil {
		md = proxy.Metadata
	} else {
		md = &model.NodeMetadata{}
	}
	if p.version != nil && (md.IstioVersion == "" || !p.version.MatchString(md.IstioVersion)) {
		return false
	}
	for k, v := range pm.GetMetadata() {
		if s, ok := md.Raw[k].(string); !ok || s != v {
			return false
		}
	}
	return true
}

// PatchRef names one patch of a Patches, for debugging and tests.
type PatchRef struct {
	Namespace string                                 `json:"namespace"`
	Name      string                                 `json:"name"`
	Index     int                                    `json:"index"`
	ApplyTo   networking.EnvoyFilter_ApplyTo         `json:"applyTo"`
	Operation networking.EnvoyFilter_Patch_Operation `json:"operation"`
}

// Refs lists the patches in the order they apply (the operation as
// applied: INSERT_* outside filters and routes is ADD).
func (p *Patches) Refs() []PatchRef {
	if p == nil {
		return nil
	}
	out := make([]PatchRef, 0, len(p.all))
	for _, x := range p.all {
		out = append(out, PatchRef{Namespace: x.filter.Namespace, Name: x.filter.Name, Index: x.index, ApplyTo: x.applyTo, Operation: x.op})
	}
	return out
}
