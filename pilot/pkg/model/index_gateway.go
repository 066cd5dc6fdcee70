package model

import (
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// gatewayIndex holds the Istio Gateways, oldest first, by namespace and by
// name. Which gateway proxies a Gateway configures is decided by its
// selector (and, with ScopeGatewayToNamespace, the proxy's namespace).
//
// Kinds: Gateway (and the Gateway API kinds translated into it).
type gatewayIndex struct {
	indexBase
	all         []config.Config
	byNamespace map[string][]config.Config
	byKey       map[types.NamespacedName]*config.Config
	scopeToNS   bool
}

func buildGatewayIndex(bc *buildContext) *gatewayIndex {
	x := &gatewayIndex{
		byNamespace: map[string][]config.Config{},
		byKey:       map[types.NamespacedName]*config.Config{},
		scopeToNS:   bc.env.Options().ScopeGatewayToNamespace,
	}
	for _, cfg := range sortedByCreation(bc.list(kind.Gateway)) {
		if _, ok := cfg.Spec.(*networking.Gateway); ok {
			x.all = append(x.all, cfg)
		}
	}
	for i := range x.all {
		cfg := &x.all[i]
		x.byNamespace[cfg.Namespace] = append(x.byNamespace[cfg.Namespace], *cfg)
		x.byKey[nameOf(cfg)] = cfg
	}
	return x
}

// Gateway returns one Gateway, or nil.
func (p *PushContext) Gateway(namespace, name string) *config.Config {
	return p.gateways.byKey[types.NamespacedName{Namespace: namespace, Name: name}]
}

// Gateways returns every Gateway, oldest first (shared, read-only).
func (p *PushContext) Gateways() []config.Config { return p.gateways.all }

// GatewaysForProxy returns the Gateways whose selector selects the proxy's
// labels (an empty selector selects every gateway proxy), oldest first;
// only those of the proxy's namespace with ScopeGatewayToNamespace.
func (p *PushContext) GatewaysForProxy(proxy *Proxy) []config.Config {
	if proxy == nil {
		return nil
	}
	candidates := p.gateways.all
	if p.gateways.scopeToNS {
		candidates = p.gateways.byNamespace[proxy.ConfigNamespace]
	}
	var out []config.Config
	for i := range candidates {
		gw := candidates[i].Spec.(*networking.Gateway)
		if selectorMatches(gw.GetSelector(), proxy.Labels) {
			out = append(out, candidates[i])
		}
	}
	return out
}

// GatewaysInScope returns the Gateways that may apply to a gateway proxy,
// oldest first (shared, read-only): all of them, or with
// ScopeGatewayToNamespace those of its namespace. Which ones apply is
// decided by their selector or the Service they name (networking/gateway).
func (p *PushContext) GatewaysInScope(proxy *Proxy) []config.Config {
	if proxy == nil {
		return nil
	}
	if p.gateways.scopeToNS {
		return p.gateways.byNamespace[proxy.ConfigNamespace]
	}
	return p.gateways.all
}

// GatewaysReferenceSecret tells whether a Gateway that may apply to the
// gateway proxy names Secret namespace/name in a server's credentialName
// (or its CA, <name>-cacert). A name without a namespace is the proxy's.
func (p *PushContext) GatewaysReferenceSecret(proxy *Proxy, namespace, name string) bool {
	for _, cfg := range p.GatewaysInScope(proxy) {
		gw := cfg.Spec.(*networking.Gateway)
		for _, s := range gw.GetServers() {
			t := s.GetTls()
			refs := append([]string{t.GetCredentialName(), t.GetCaCertCredentialName()}, t.GetCredentialNames()...)
			for _, r := range refs {
				if r == "" {
					continue
				}
				if _, rest, ok := strings.Cut(r, "://"); ok {
					r = rest
				}
				ns, n, scoped := strings.Cut(r, "/")
				if !scoped {
					ns, n = proxy.ConfigNamespace, r
				}
				if ns == namespace && (n == name || n+"-cacert" == name) {
					return true
				}
			}
		}
	}
	return false
}
