package model

import (
	"cmp"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// DefaultSidecarName names the scope of a namespace without a Sidecar.
const DefaultSidecarName = "default-sidecar"

// SidecarScope is what one proxy may see of the mesh: the services,
// VirtualServices and DestinationRules the egress hosts of its Sidecar
// import ("*/*" without a Sidecar: everything exported to its namespace),
// and the config keys that view depends on. A scope is computed once per
// namespace (and Sidecar) per snapshot and is shared and read-only.
type SidecarScope struct {
	// Name is the Sidecar's name, or DefaultSidecarName.
	Name string
	// Namespace is where the scope applies (a root-namespace Sidecar
	// yields one scope per namespace).
	Namespace string
	// Sidecar is the Sidecar the scope comes from; nil for the default.
	Sidecar *config.Config
	// EgressListeners are the egress listeners with what each imports.
	EgressListeners []*EgressListener
	// OutboundTrafficPolicy is the Sidecar's, else the mesh's.
	OutboundTrafficPolicy *networking.OutboundTrafficPolicy

	rootNamespace      string
	services           []*Service
	servicesByHostname map[string]*Service
	destinationRules   map[string][]*ConsolidatedDestRule
	dependencies       map[ConfigKey]struct{}
}

// EgressListener is one egress listener of a scope and what it imports.
type EgressListener struct {
	// Listener is the Sidecar's listener ("*/*" for the default scope).
	Listener        *networking.IstioEgressListener
	services        []*Service
	virtualServices []*config.Config
}

// Services returns the services the listener imports.
func (l *EgressListener) Services() []*Service { return l.services }

// VirtualServices returns the mesh VirtualServices the listener imports.
func (l *EgressListener) VirtualServices() []*config.Config { return l.virtualServices }

// Kinds a scope tracks key by key; other kinds are decided by namespace or
// always push (see DependsOnConfig).
var (
	scopedConfigKinds = []kind.Kind{kind.ServiceEntry, kind.VirtualService, kind.DestinationRule, kind.Sidecar}
	// namespaceScopedKinds affect the proxies of their namespace, or every
	// proxy when they are in the root namespace.
	namespaceScopedKinds = []kind.Kind{
		kind.EnvoyFilter, kind.AuthorizationPolicy, kind.RequestAuthentication,
		kind.PeerAuthentication, kind.WasmPlugin, kind.Telemetry,
	}
)

// DependsOnConfig reports whether a change of key may change what proxies
// of this scope are sent: ServiceEntry, VirtualService, DestinationRule and
// Sidecar keys only when the scope uses that object; namespace-scoped
// policies when they are in the scope's namespace or the root namespace;
// any other kind always. A nil scope depends on everything.
func (sc *SidecarScope) DependsOnConfig(key ConfigKey) bool {
	if sc == nil {
		return true
	}
	if slices.Contains(namespaceScopedKinds, key.Kind) {
		return key.Namespace == sc.rootNamespace || key.Namespace == sc.Namespace
	}
	if !slices.Contains(scopedConfigKinds, key.Kind) {
		return true
	}
	_, ok := sc.dependencies[key]
	return ok
}

// Dependencies returns the keys the scope tracks, sorted.
func (sc *SidecarScope) Dependencies() []ConfigKey {
	out := make([]ConfigKey, 0, len(sc.dependencies))
	for k := range sc.dependencies {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b ConfigKey) int { return cmp.Compare(a.String(), b.String()) })
	return out
}

// Services returns the imported services, hostnames unique (shared,
// read-only).
func (sc *SidecarScope) Services() []*Service { return sc.services }

// Service returns the imported service named hostname, or nil.
func (sc *SidecarScope) Service(hostname string) *Service { return sc.servicesByHostname[hostname] }

// VirtualServices returns the VirtualServices imported by any listener,
// each once, in listener order.
func (sc *SidecarScope) VirtualServices() []*config.Config {
	if len(sc.EgressListeners) == 1 {
		return sc.EgressListeners[0].virtualServices
	}
	var out []*config.Config
	seen := map[types.NamespacedName]struct{}{}
	for _, l := range sc.EgressListeners {
		for _, vs := range l.virtualServices {
			if _, ok := seen[nameOf(vs)]; !ok {
				seen[nameOf(vs)] = struct{}{}
				out = append(out, vs)
			}
		}
	}
	return out
}

// DestinationRules returns the rules the scope uses for hostname.
func (sc *SidecarScope) DestinationRules(hostname string) []*ConsolidatedDestRule {
	return sc.destinationRules[hostname]
}

// DestinationRule picks the rule a proxy of this scope uses for outbound
// traffic to hostname: a rule of the proxy's namespace whose workload
// selector selects it, else the rule without selector; nil when none.
func (sc *SidecarScope) DestinationRule(proxy *Proxy, hostname string) *ConsolidatedDestRule {
	var catchAll *ConsolidatedDestRule
	for _, dr := range sc.destinationRules[hostname] {
		sel := dr.Spec().GetWorkloadSelector()
		if sel == nil {
			catchAll = dr
			continue
		}
		if proxy != nil && dr.rule.Namespace == sc.Namespace && selectorMatches(sel.GetMatchLabels(), proxy.Labels) {
			return dr
		}
	}
	return catchAll
}

// MarshalJSON renders the scope for debug endpoints.
func (sc *SidecarScope) MarshalJSON() ([]byte, error) {
	hosts := make([]string, 0, len(sc.services))
	for _, s := range sc.services {
		hosts = append(hosts, s.Attributes.Namespace+"/"+s.Hostname)
	}
	vses := []string{}
	for _, vs := range sc.VirtualServices() {
		vses = append(vses, nameOf(vs).String())
	}
	deps := []string{}
	for _, k := range sc.Dependencies() {
		deps = append(deps, k.String())
	}
	return json.Marshal(map[string]any{
		"name": sc.Name, "namespace": sc.Namespace, "services": hosts,
		"virtualServices": vses, "dependencies": deps, "outboundTrafficPolicy": sc.OutboundTrafficPolicy,
	})
}

// scopeInputs are the indexes a scope is computed from (those of the
// snapshot the sidecar index belongs to).
type scopeInputs struct {
	services        *serviceIndex
	virtualServices *virtualServiceIndex
	destRules       *destinationRuleIndex
	root            string
	outbound        *networking.OutboundTrafficPolicy
}

// computeScope builds the scope of namespace ns from a Sidecar (nil: the
// default "*/*" scope).
func computeScope(in *scopeInputs, sidecar *config.Config, ns string) *SidecarScope {
	sc := &SidecarScope{
		Name: DefaultSidecarName, Namespace: ns, Sidecar: sidecar, rootNamespace: in.root,
		servicesByHostname:    map[string]*Service{},
		destinationRules:      map[string][]*ConsolidatedDestRule{},
		dependencies:          map[ConfigKey]struct{}{},
		OutboundTrafficPolicy: in.outbound,
	}
	var spec *networking.Sidecar
	if sidecar != nil {
		spec, _ = sidecar.Spec.(*networking.Sidecar)
		sc.Name = sidecar.Name
		sc.dependencies[ConfigKey{Kind: kind.Sidecar, Name: sidecar.Name, Namespace: sidecar.Namespace}] = struct{}{}
		if spec.GetOutboundTrafficPolicy() != nil {
			sc.OutboundTrafficPolicy = spec.GetOutboundTrafficPolicy()
		}
	}
	egress := spec.GetEgress()
	if len(egress) == 0 {
		egress = []*networking.IstioEgressListener{{Hosts: []string{"*/*"}}}
	}
	for _, l := range egress {
		sc.EgressListeners = append(sc.EgressListeners, newEgressListener(in, l, ns))
	}
	sc.collectServices(in, ns)
	sc.selectDestinationRules(in, ns)
	return sc
}

// collectServices gathers the listeners' services, then the destinations
// of their VirtualServices, and records the VirtualService dependencies.
func (sc *SidecarScope) collectServices(in *scopeInputs, ns string) {
	for _, l := range sc.EgressListeners {
		for _, s := range l.services {
			sc.addService(s)
		}
	}
	for _, l := range sc.EgressListeners {
		for _, vs := range l.virtualServices {
			key := ConfigKey{Kind: kind.VirtualService, Name: vs.Name, Namespace: vs.Namespace}
			sc.dependencies[key] = struct{}{}
			for _, d := range in.virtualServices.delegates[key] {
				sc.dependencies[d] = struct{}{}
			}
			for _, h := range vsDestinationHosts(vs.Spec.(*networking.VirtualService)) {
				sc.addService(in.services.forHostname(h, ns))
			}
		}
	}
}

// addService adds s unless its hostname is taken; a Kubernetes Service
// replaces a ServiceEntry of the same hostname.
func (sc *SidecarScope) addService(s *Service) {
	if s == nil {
		return
	}
	existing, ok := sc.servicesByHostname[s.Hostname]
	switch {
	case !ok:
		sc.services = append(sc.services, s)
	case existing.Attributes.ServiceRegistry != Kubernetes && s.Attributes.ServiceRegistry == Kubernetes:
		i := slices.Index(sc.services, existing)
		sc.services[i] = s
	default:
		return
	}
	sc.servicesByHostname[s.Hostname] = s
}

func (sc *SidecarScope) selectDestinationRules(in *scopeInputs, ns string) {
	for _, s := range sc.services {
		sc.dependencies[ConfigKey{Kind: kind.ServiceEntry, Name: s.Hostname, Namespace: s.Attributes.Namespace}] = struct{}{}
		drs := in.destRules.forService(ns, s, in.services)
		if len(drs) == 0 {
			continue
		}
		sc.destinationRules[s.Hostname] = drs
		for _, dr := range drs {
			for _, from := range dr.from {
				sc.dependencies[ConfigKey{Kind: kind.DestinationRule, Name: from.Name, Namespace: from.Namespace}] = struct{}{}
			}
		}
	}
}

// importedHosts are the egress hosts of a listener by namespace ("*" for
// any namespace; "." already replaced).
type importedHosts map[string][]string

func parseEgressHosts(hosts []string, ns string) importedHosts {
	out := importedHosts{}
	for _, h := range hosts {
		hostNS, name, ok := strings.Cut(h, "/")
		if !ok || strings.Contains(name, "/") {
			continue // validation rejects these; ignore rather than guess
		}
		if hostNS == string(VisibilityPrivate) {
			hostNS = ns
		}
		out[hostNS] = append(out[hostNS], name)
	}
	return out
}

// matchService reports whether the hosts imported from the service's
// namespace, else from any namespace, cover its hostname.
func (h importedHosts) matchService(s *Service) bool {
	covered := func(list []string) bool {
		for _, imp := range list {
			if hostSubsetOf(s.Hostname, imp) {
				return true
			}
		}
		return false
	}
	return covered(h[s.Attributes.Namespace]) || covered(h["*"])
}

// matchVirtualService reports whether an imported host of the
// VirtualService's namespace (or of any namespace) matches one of its
// hosts: both ways for classic VirtualServices, subset for Gateway API
// routes.
func (h importedHosts) matchVirtualService(cfg *config.Config) bool {
	gatewaySemantics := useGatewaySemantics(cfg)
	vs := cfg.Spec.(*networking.VirtualService)
	covered := func(list []string) bool {
		for _, imp := range list {
			for _, vh := range vs.Hosts {
				if vh == imp || (gatewaySemantics && hostSubsetOf(vh, imp)) || (!gatewaySemantics && hostMatches(vh, imp)) {
					return true
				}
			}
		}
		return false
	}
	return covered(h[cfg.Namespace]) || covered(h["*"])
}

func newEgressListener(in *scopeInputs, l *networking.IstioEgressListener, ns string) *EgressListener {
	hosts := parseEgressHosts(l.GetHosts(), ns)
	out := &EgressListener{Listener: l}
	for _, vs := range in.virtualServices.forGateway(ns, MeshGateway) {
		if hosts.matchVirtualService(vs) {
			out.virtualServices = append(out.virtualServices, vs)
		}
	}
	var imported []*Service
	for _, s := range in.services.exportedToNamespace(ns) {
		if hosts.matchService(s) {
			imported = append(imported, s)
		}
	}
	out.services = pickOnePerHostname(imported, ns)
	return out
}

// pickOnePerHostname keeps one service per hostname: the one of namespace
// ns, else a Kubernetes Service over ServiceEntries, else the first.
func pickOnePerHostname(services []*Service, ns string) []*Service {
	type choice struct {
		namespace string
		k8s       bool
	}
	chosen := make(map[string]choice, len(services))
	for _, s := range services {
		c := choice{namespace: s.Attributes.Namespace, k8s: s.Attributes.ServiceRegistry == Kubernetes}
		prev, seen := chosen[s.Hostname]
		switch {
		case !seen, c.namespace == ns:
			chosen[s.Hostname] = c
		case !prev.k8s && c.k8s && prev.namespace != ns:
			chosen[s.Hostname] = c
		}
	}
	out := make([]*Service, 0, len(chosen))
	for _, s := range services {
		if chosen[s.Hostname].namespace == s.Attributes.Namespace {
			out = append(out, s)
			delete(chosen, s.Hostname)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Hostname < out[j].Hostname })
	return out
}
