package model

import (
	"runtime"
	"slices"
	"sync"

	networking "istio.io/api/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// sidecarIndex holds the Sidecar resources by namespace and the sidecar
// scopes computed from them. A sidecar proxy uses the first Sidecar of its
// namespace whose workload selector selects it (Sidecars with a selector
// first, oldest first), else its namespace's Sidecar without selector, else
// the root namespace's Sidecar without selector, else the default "*/*"
// scope. Gateways and other proxies use the default scope of their
// namespace.
//
// Scopes are computed on first use, once per namespace and Sidecar, from
// the services, VirtualService and DestinationRule indexes of the snapshot
// the index was built for — so the index is rebuilt whenever one of those
// is.
//
// Kinds: Sidecar. Depends on: services, virtualServices, destinationRules.
type sidecarIndex struct {
	indexBase
	count       int
	in          *scopeInputs
	byNamespace map[string][]*config.Config
	// rootDefault is the root namespace's Sidecar without selector.
	rootDefault *config.Config

	mu     sync.Mutex
	scopes map[scopeKey]*lazyScope
}

// scopeKey names a scope: the namespace it applies to and the Sidecar it
// comes from (zero for the default scope).
type scopeKey struct {
	namespace string
	sidecar   types.NamespacedName
}

type lazyScope struct {
	once  sync.Once
	scope *SidecarScope
}

func buildSidecarIndex(bc *buildContext) *sidecarIndex {
	x := &sidecarIndex{
		in: &scopeInputs{
			services: bc.push.services, virtualServices: bc.push.virtualServices, destRules: bc.push.destinationRules,
			root: bc.root, outbound: meshOutboundPolicy(bc),
		},
		byNamespace: map[string][]*config.Config{},
		scopes:      map[scopeKey]*lazyScope{},
	}
	all := sortedByCreation(bc.list(kind.Sidecar))
	for i := range all {
		cfg := &all[i]
		spec, ok := cfg.Spec.(*networking.Sidecar)
		if !ok {
			continue
		}
		x.count++
		x.byNamespace[cfg.Namespace] = append(x.byNamespace[cfg.Namespace], cfg)
		if cfg.Namespace == bc.root && spec.GetWorkloadSelector() == nil && x.rootDefault == nil {
			x.rootDefault = cfg
		}
	}
	// Sidecars with a selector before the namespace-wide one; creation
	// order otherwise (the sort is stable).
	for _, l := range x.byNamespace {
		slices.SortStableFunc(l, func(a, b *config.Config) int {
			return boolRank(hasSidecarSelector(b)) - boolRank(hasSidecarSelector(a))
		})
	}
	return x
}

func hasSidecarSelector(c *config.Config) bool {
	return len(c.Spec.(*networking.Sidecar).GetWorkloadSelector().GetLabels()) > 0
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func meshOutboundPolicy(bc *buildContext) *networking.OutboundTrafficPolicy {
	if p := bc.mesh.GetOutboundTrafficPolicy(); p != nil {
		return &networking.OutboundTrafficPolicy{Mode: networking.OutboundTrafficPolicy_Mode(p.GetMode())}
	}
	return nil
}

// sidecarFor returns the Sidecar that configures the proxy, or nil.
func (x *sidecarIndex) sidecarFor(proxy *Proxy) *config.Config {
	if proxy.Type != SidecarProxy {
		return nil
	}
	for _, cfg := range x.byNamespace[proxy.ConfigNamespace] {
		sel := cfg.Spec.(*networking.Sidecar).GetWorkloadSelector().GetLabels()
		if len(sel) == 0 || selectorMatches(sel, proxy.Labels) {
			return cfg
		}
	}
	return x.rootDefault
}

// keyFor is the key of the proxy's scope and the Sidecar it comes from.
func (x *sidecarIndex) keyFor(proxy *Proxy) (scopeKey, *config.Config) {
	ns := ""
	var sidecar *config.Config
	if proxy != nil {
		ns = proxy.ConfigNamespace
		sidecar = x.sidecarFor(proxy)
	}
	key := scopeKey{namespace: ns}
	if sidecar != nil {
		key.sidecar = nameOf(sidecar)
	}
	return key, sidecar
}

// scopeFor returns the proxy's scope, computing it on first use.
func (x *sidecarIndex) scopeFor(proxy *Proxy) *SidecarScope {
	key, sidecar := x.keyFor(proxy)
	ns := key.namespace
	x.mu.Lock()
	ls := x.scopes[key]
	if ls == nil {
		ls = &lazyScope{}
		x.scopes[key] = ls
	}
	x.mu.Unlock()
	ls.once.Do(func() { ls.scope = computeScope(x.in, sidecar, ns) })
	return ls.scope
}

// WarmSidecarScopes computes the scopes of the proxies, each distinct one
// once, up to GOMAXPROCS at a time: a push that decides who it concerns
// reads every connected proxy's scope, and computing them one after the
// other delays every proxy's push by all of them.
func (p *PushContext) WarmSidecarScopes(proxies []*Proxy) {
	x := p.sidecars
	seen := map[scopeKey]bool{}
	var todo []*Proxy
	for _, proxy := range proxies {
		if k, _ := x.keyFor(proxy); !seen[k] {
			seen[k] = true
			todo = append(todo, proxy)
		}
	}
	if len(todo) < 2 {
		return
	}
	work := make(chan *Proxy)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for proxy := range work {
				x.scopeFor(proxy)
			}
		}()
	}
	for _, proxy := range todo {
		work <- proxy
	}
	close(work)
	wg.Wait()
}

// SidecarScope returns the proxy's sidecar scope (never nil): what the
// proxy may see and which config keys that view depends on.
func (p *PushContext) SidecarScope(proxy *Proxy) *SidecarScope { return p.sidecars.scopeFor(proxy) }

// PreviousSidecarScope returns the proxy's scope in the snapshot before the
// last change of sidecar scopes, or nil; a proxy whose previous scope used
// a deleted object must still be pushed.
func (p *PushContext) PreviousSidecarScope(proxy *Proxy) *SidecarScope {
	if p.prevSidecars == nil {
		return nil
	}
	return p.prevSidecars.scopeFor(proxy)
}

// DefaultSidecarScope returns the default "*/*" scope of a namespace.
func (p *PushContext) DefaultSidecarScope(ns string) *SidecarScope {
	return p.sidecars.scopeFor(&Proxy{Type: Router, ConfigNamespace: ns})
}

// Sidecars returns the Sidecar resources of a namespace, those with a
// workload selector first (shared, read-only).
func (p *PushContext) Sidecars(ns string) []*config.Config { return p.sidecars.byNamespace[ns] }

// ComputeSidecarScope computes, without caching, the scope a Sidecar (nil:
// the default one) gives proxies of namespace ns in this snapshot.
func (p *PushContext) ComputeSidecarScope(sidecar *config.Config, ns string) *SidecarScope {
	return computeScope(p.sidecars.in, sidecar, ns)
}
