package model

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strings"

	networking "istio.io/api/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/host"
	"github.com/meshplane/istiod/pkg/config/protocol"
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
		port := listenerMatchPort(l.Listener)
		for _, vs := range l.virtualServices {
			key := ConfigKey{Kind: kind.VirtualService, Name: vs.Name, Namespace: vs.Namespace}
			sc.dependencies[key] = struct{}{}
			for _, d := range in.virtualServices.delegates[key] {
				sc.dependencies[d] = struct{}{}
			}
			spec := vs.Spec.(*networking.VirtualService)
			var ports map[string]map[int]bool // computed on first need
			for _, h := range vsDestinationHosts(spec) {
				svc := in.services.forHostname(h, ns)
				if svc == nil {
					continue
				}
				if port == 0 && sc.servicesByHostname[svc.Hostname] == svc {
					// imported whole already: a copy trimmed to some of
					// its ports would merge back into the same ports
					continue
				}
				if port != 0 {
					svc = trimToPort(svc, port)
				} else {
					if ports == nil {
						ports = vsDestinationPorts(spec, ns)
					}
					if ps, ok := ports[h]; ok {
						svc = trimToPorts(svc, ps)
					}
				}
				sc.addService(svc)
			}
		}
	}
}

// listenerMatchPort is the port an egress listener limits its services to
// (0: none; an HTTP_PROXY listener is a generic proxy and takes any).
func listenerMatchPort(l *networking.IstioEgressListener) int {
	if n := l.GetPort().GetNumber(); n != 0 && protocol.Parse(l.GetPort().GetProtocol()) != protocol.HTTPProxy {
		return int(n)
	}
	return 0
}

// trimToPort is the service with only that port (itself when it is its only
// port), or nil when it has no such port.
func trimToPort(s *Service, port int) *Service {
	for _, p := range s.Ports {
		if p.Port != port {
			continue
		}
		if len(s.Ports) == 1 {
			return s
		}
		out := s.ShallowCopy()
		out.Ports = PortList{{Name: p.Name, Port: p.Port, Protocol: p.Protocol}}
		return out
	}
	return nil
}

// trimToPorts is the service with only the ports a VirtualService sends to
// (0 in ports: a destination without a port, which needs them all); nil
// when it has none of them.
func trimToPorts(s *Service, ports map[int]bool) *Service {
	if len(ports) == 0 || ports[0] {
		return s
	}
	var kept PortList
	for _, p := range s.Ports {
		if ports[p.Port] {
			c := *p
			kept = append(kept, &c)
		}
	}
	switch {
	case len(kept) == len(s.Ports):
		return s
	case len(kept) == 0:
		return nil
	}
	out := s.ShallowCopy()
	out.Ports = kept
	return out
}

// vsDestinationPorts are the ports each destination host is sent to (0:
// no port given), skipping HTTP routes whose matches all name another
// source namespace than ns.
func vsDestinationPorts(vs *networking.VirtualService, ns string) map[string]map[int]bool {
	out := map[string]map[int]bool{}
	add := func(d *networking.Destination) {
		if d == nil || d.Host == "" {
			return
		}
		if out[d.Host] == nil {
			out[d.Host] = map[int]bool{}
		}
		out[d.Host][int(d.GetPort().GetNumber())] = true
	}
	for _, r := range vs.GetHttp() {
		if !matchesSourceNamespace(r.Match, ns) {
			continue
		}
		for _, d := range r.Route {
			add(d.Destination)
		}
		add(r.Mirror)
		for _, m := range r.Mirrors {
			add(m.Destination)
		}
	}
	for _, r := range vs.GetTcp() {
		for _, d := range r.Route {
			add(d.Destination)
		}
	}
	for _, r := range vs.GetTls() {
		for _, d := range r.Route {
			add(d.Destination)
		}
	}
	return out
}

// matchesSourceNamespace: no match names a source namespace, or one names
// ns.
func matchesSourceNamespace(ms []*networking.HTTPMatchRequest, ns string) bool {
	ok := true
	for _, m := range ms {
		if m.SourceNamespace == "" {
			continue
		}
		if m.SourceNamespace == ns {
			return true
		}
		ok = false
	}
	return ok
}

// addService adds s unless its hostname is taken; a Kubernetes Service
// replaces a ServiceEntry of the same hostname, and the same service seen
// through two listeners with different ports (each trimmed to its own)
// gets the ports of both, as in Istio.
func (sc *SidecarScope) addService(s *Service) {
	if s == nil {
		return
	}
	existing, ok := sc.servicesByHostname[s.Hostname]
	switch {
	case !ok:
		sc.services = append(sc.services, s)
	case s == existing:
		return
	case existing.Attributes.ServiceRegistry == Kubernetes && s.Attributes.ServiceRegistry != Kubernetes:
		return
	case existing.Attributes.ServiceRegistry != Kubernetes && s.Attributes.ServiceRegistry == Kubernetes:
		i := slices.Index(sc.services, existing)
		sc.services[i] = s
	case samePorts(existing.Ports, s.Ports) || !canMergeServices(existing, s):
		return
	default:
		merged := existing.ShallowCopy()
		merged.Ports = make(PortList, 0, len(existing.Ports)+len(s.Ports))
		for _, p := range existing.Ports {
			c := *p
			merged.Ports = append(merged.Ports, &c)
		}
		for _, p := range s.Ports {
			if !slices.ContainsFunc(merged.Ports, func(o *Port) bool { return o.Port == p.Port }) {
				merged.Ports = append(merged.Ports, p)
			}
		}
		sc.services[slices.Index(sc.services, existing)] = merged
		s = merged
	}
	sc.servicesByHostname[s.Hostname] = s
}

// samePorts: the lists hold the same ports in the same order.
func samePorts(a, b PortList) bool {
	return slices.EqualFunc(a, b, func(x, y *Port) bool { return *x == *y })
}

// canMergeServices: two services of one hostname are the same object seen
// through different listeners (same namespace, registry, resolution,
// labels, selectors and exportTo), so their ports may be merged.
func canMergeServices(a, b *Service) bool {
	return a.Attributes.Namespace == b.Attributes.Namespace && a.Resolution == b.Resolution &&
		a.Attributes.ServiceRegistry == b.Attributes.ServiceRegistry &&
		maps.Equal(a.Attributes.Labels, b.Attributes.Labels) &&
		maps.Equal(a.Attributes.LabelSelectors, b.Attributes.LabelSelectors) &&
		maps.Equal(a.Attributes.ExportTo, b.Attributes.ExportTo)
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

// names are every imported host name, whatever its namespace.
func (h importedHosts) names() []string {
	var out []string
	for _, l := range h {
		out = append(out, l...)
	}
	return out
}

// matchService reports whether the hosts imported from the service's
// namespace, else from any namespace, cover its hostname.
func (h importedHosts) matchService(s *Service) bool {
	covered := func(list []string) bool {
		for _, imp := range list {
			if host.SubsetOf(s.Hostname, imp) {
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
				if vh == imp || (gatewaySemantics && host.SubsetOf(vh, imp)) || (!gatewaySemantics && host.Matches(vh, imp)) {
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
	port := listenerMatchPort(l)
	candidates, ok := in.services.candidatesFor(hosts.names(), ns)
	if !ok {
		candidates = in.services.exportedToNamespace(ns)
	}
	for _, s := range candidates {
		if !hosts.matchService(s) {
			continue
		}
		if port != 0 {
			// a listener on a port takes only that port of its services
			if s = trimToPort(s, port); s == nil {
				continue
			}
		}
		// and only the aliases it imports too
		imported = append(imported, trimAliases(hosts.importsOf(s), s))
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

// IngressListeners are the Sidecar's ingress listeners (nil: the ports of
// the services that select the workload are its inbound ports).
func (sc *SidecarScope) IngressListeners() []*networking.IstioIngressListener {
	if sc == nil || sc.Sidecar == nil {
		return nil
	}
	spec, _ := sc.Sidecar.Spec.(*networking.Sidecar)
	return spec.GetIngress()
}

// InboundConnectionPool is the connection pool the Sidecar sets for an
// inbound port: its ingress listener's, else inboundConnectionPool; nil
// when it sets none.
func (sc *SidecarScope) InboundConnectionPool(port int) *networking.ConnectionPoolSettings {
	if sc == nil || sc.Sidecar == nil {
		return nil
	}
	spec, _ := sc.Sidecar.Spec.(*networking.Sidecar)
	for _, l := range spec.GetIngress() {
		if int(l.GetPort().GetNumber()) == port && l.GetConnectionPool() != nil {
			return l.GetConnectionPool()
		}
	}
	return spec.GetInboundConnectionPool()
}
