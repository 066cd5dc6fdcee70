package model

import (
	"slices"

	networking "istio.io/api/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// virtualServiceIndex holds the VirtualServices with every host resolved
// (short names completed with the namespace and domain, gateway references
// as namespace/name), delegates merged into their roots, grouped by the
// gateway they bind to ("mesh" for sidecars) and by visibility (exportTo,
// with the mesh's defaultVirtualServiceExportTo when unset).
//
// Kinds: VirtualService (and the Gateway API kinds translated into it).
type virtualServiceIndex struct {
	indexBase
	// memo holds the resolved copy of each store object, reused by the
	// next incremental rebuild for objects that did not change.
	memo objectMemo[*config.Config]
	// all is every non-delegate VirtualService, oldest first, roots merged.
	all   []*config.Config
	byKey map[types.NamespacedName]*config.Config
	// publicByGateway: exported everywhere. privateByGateway: keyed by the
	// namespace that sees them (their own or one they are exported to).
	publicByGateway  map[string][]*config.Config
	privateByGateway map[types.NamespacedName][]*config.Config
	// visibility[i] is the resolved exportTo of all[i].
	visibility []exportSet
	// delegates maps a root to the delegates it references.
	delegates map[ConfigKey][]ConfigKey
	// l4 are the VirtualServices of all with tcp or tls routes, the only
	// ones a sidecar's listeners read; l4Seq is the snapshot in which that
	// list last changed (an object in it changed, or it gained or lost one).
	l4    []*config.Config
	l4Seq uint64
}

// HasL4Routes reports whether a VirtualService has tcp or tls routes.
func HasL4Routes(vs *networking.VirtualService) bool {
	return len(vs.GetTcp()) > 0 || len(vs.GetTls()) > 0
}

func buildVirtualServiceIndex(bc *buildContext) *virtualServiceIndex {
	var prev objectMemo[*config.Config]
	if old, _ := bc.oldIndex().(*virtualServiceIndex); old != nil {
		prev = old.memo
	}
	raw := bc.list(kind.VirtualService)
	x := &virtualServiceIndex{
		memo:             make(objectMemo[*config.Config], len(raw)),
		publicByGateway:  map[string][]*config.Config{},
		privateByGateway: map[types.NamespacedName][]*config.Config{},
	}
	resolved := make([]*config.Config, 0, len(raw))
	for i := range raw {
		cfg := &raw[i]
		if _, ok := cfg.Spec.(*networking.VirtualService); !ok {
			continue
		}
		r, ok := prev.get(cfg)
		if !ok {
			c := resolveVirtualService(cfg, bc.domainFor(cfg))
			r = &c
		}
		x.memo.put(cfg, r)
		resolved = append(resolved, r)
	}
	sortPtrsByCreation(resolved)
	defaults := bc.mesh.GetDefaultVirtualServiceExportTo()
	x.all, x.delegates = mergeDelegates(resolved, defaults)
	x.group(defaults)
	x.checkDuplicateDomains()
	for _, cfg := range x.all {
		if HasL4Routes(cfg.Spec.(*networking.VirtualService)) {
			x.l4 = append(x.l4, cfg)
		}
	}
	// an unchanged object keeps its resolved copy (the memo), so equal
	// pointers mean equal content
	x.l4Seq = bc.push.seq
	if old, _ := bc.oldIndex().(*virtualServiceIndex); old != nil && slices.Equal(old.l4, x.l4) {
		x.l4Seq = old.l4Seq
	}
	return x
}

// L4VirtualServicesChangedSince reports whether the VirtualServices with
// tcp or tls routes changed after snapshot seq was built (always, when seq
// is not an ancestor this snapshot knows of).
func (p *PushContext) L4VirtualServicesChangedSince(seq uint64) bool {
	return p.virtualServices.l4Seq > seq
}

// group indexes x.all by gateway and visibility; every list keeps the
// creation order of x.all.
func (x *virtualServiceIndex) group(defaults []string) {
	x.byKey = make(map[types.NamespacedName]*config.Config, len(x.all))
	x.visibility = make([]exportSet, len(x.all))
	for i, cfg := range x.all {
		vs := cfg.Spec.(*networking.VirtualService)
		x.byKey[nameOf(cfg)] = cfg
		vis := newExportSet(vs.ExportTo, cfg.Namespace, defaults)
		x.visibility[i] = vis
		for _, gw := range gatewayNames(vs) {
			if vis.public {
				x.publicByGateway[gw] = append(x.publicByGateway[gw], cfg)
				continue
			}
			for ns := range vis.namespaces {
				k := types.NamespacedName{Namespace: ns, Name: gw}
				x.privateByGateway[k] = append(x.privateByGateway[k], cfg)
			}
		}
	}
}

// checkDuplicateDomains reports mesh VirtualServices that claim a host an
// older one already claims for some common namespace: sidecars there only
// use the older one.
func (x *virtualServiceIndex) checkDuplicateDomains() {
	// Most hosts have one claimant: first holds it, more the rare others.
	first := make(map[string]int, len(x.all))
	more := map[string][]int{}
	for i, cfg := range x.all {
		vs := cfg.Spec.(*networking.VirtualService)
		if !slices.Contains(gatewayNames(vs), MeshGateway) {
			continue
		}
		for _, h := range vs.Hosts {
			j, claimed := first[h]
			if !claimed {
				first[h] = i
				continue
			}
			for _, k := range append([]int{j}, more[h]...) {
				if x.visibility[k].overlaps(x.visibility[i]) {
					x.addProblem(MetricDuplicatedDomains, nameOf(cfg).String()+"/"+h,
						"duplicate domain from virtual service: %s: host %s is already defined by %s", nameOf(cfg), h, nameOf(x.all[k]))
					break
				}
			}
			more[h] = append(more[h], i)
		}
	}
}

// forGateway returns the VirtualServices bound to gateway that a proxy in
// namespace ns sees: those private to or exported to ns first, then the
// public ones, with Gateway API routes of ns ahead of the other public
// ones.
func (x *virtualServiceIndex) forGateway(ns, gateway string) []*config.Config {
	private := x.privateByGateway[types.NamespacedName{Namespace: ns, Name: gateway}]
	public := x.publicByGateway[gateway]
	out := make([]*config.Config, 0, len(private)+len(public))
	out = append(out, private...)
	for _, c := range public {
		if useGatewaySemantics(c) && c.Namespace == ns {
			out = append(out, c)
		}
	}
	for _, c := range public {
		if !(useGatewaySemantics(c) && c.Namespace == ns) {
			out = append(out, c)
		}
	}
	return out
}

// VirtualServicesForGateway returns the VirtualServices bound to gateway
// ("namespace/name", or MeshGateway for sidecars) that a proxy in namespace
// ns may see, hosts resolved and delegates merged. The slice is the
// caller's; specs are shared and read-only. Sidecar generators may prefer
// SidecarScope(proxy).VirtualServices(), which honours Sidecar egress hosts
// and copies nothing.
func (p *PushContext) VirtualServicesForGateway(ns, gateway string) []config.Config {
	ptrs := p.virtualServices.forGateway(ns, gateway)
	out := make([]config.Config, len(ptrs))
	for i, c := range ptrs {
		out[i] = *c
	}
	return out
}

// VirtualServices returns every non-delegate VirtualService, oldest first,
// resolved and merged (shared, read-only).
func (p *PushContext) VirtualServices() []*config.Config { return p.virtualServices.all }

// VirtualServiceCount is the number of VirtualServices (pilot_virt_services).
func (p *PushContext) VirtualServiceCount() int { return len(p.virtualServices.all) }

// VirtualService returns one resolved, merged VirtualService, or nil (also
// for delegates).
func (p *PushContext) VirtualService(namespace, name string) *config.Config {
	return p.virtualServices.byKey[types.NamespacedName{Namespace: namespace, Name: name}]
}

// DelegateVirtualServices returns the delegates the given VirtualServices
// reference, whether or not they exist.
func (p *PushContext) DelegateVirtualServices(vses []config.Config) []ConfigKey {
	var out []ConfigKey
	for _, vs := range vses {
		key := ConfigKey{Kind: kind.VirtualService, Name: vs.Name, Namespace: vs.Namespace}
		out = append(out, p.virtualServices.delegates[key]...)
	}
	return out
}
