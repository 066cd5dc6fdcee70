package model

import (
	"cmp"
	"slices"
	"sort"
	"strings"
)

// serviceIndex holds every service of the registries by hostname and
// namespace, and by visibility: exportTo (nil means the mesh's
// defaultServiceExportTo) decides which namespaces see a service.
//
// Kinds: ServiceEntry (every registry reports service changes under that
// kind).
type serviceIndex struct {
	indexBase
	// all is every service, oldest first.
	all []*Service
	// byHost is hostname → namespace → service. When two services of one
	// namespace claim a hostname the oldest wins, except that a Kubernetes
	// Service wins over a ServiceEntry.
	byHost map[string]map[string]*Service
	// public services are visible everywhere; private ones only in the
	// namespaces they are exported to.
	public        []*Service
	exportedTo    map[string][]*Service
	visibilityOf  map[*Service]exportSet
	defaultExport []string
	// byHostAll is hostname → every service of that name, oldest first;
	// reversed holds the hostnames reversed and sorted, so that the names
	// ending in a suffix are one range of it (wildcard egress hosts).
	byHostAll map[string][]*Service
	reversed  []string
}

func buildServiceIndex(bc *buildContext) *serviceIndex {
	all := slices.Clone(bc.env.services())
	// the ExternalName services that name each service (on copies)
	resolveServiceAliases(all)
	slices.SortStableFunc(all, compareServices)
	x := &serviceIndex{
		all:           all,
		byHost:        make(map[string]map[string]*Service, len(all)),
		exportedTo:    map[string][]*Service{},
		visibilityOf:  make(map[*Service]exportSet, len(all)),
		defaultExport: bc.mesh.GetDefaultServiceExportTo(),
		byHostAll:     make(map[string][]*Service, len(all)),
	}
	for _, s := range all {
		ns := s.Attributes.Namespace
		vis := exportSetOf(s.Attributes.ExportTo, ns, x.defaultExport)
		x.visibilityOf[s] = vis
		switch {
		case vis.public:
			x.public = append(x.public, s)
		default:
			for target := range vis.namespaces {
				x.exportedTo[target] = append(x.exportedTo[target], s)
			}
		}
		if x.byHostAll[s.Hostname] == nil {
			x.reversed = append(x.reversed, reverse(s.Hostname))
		}
		x.byHostAll[s.Hostname] = append(x.byHostAll[s.Hostname], s)
		byNS := x.byHost[s.Hostname]
		if byNS == nil {
			byNS = map[string]*Service{}
			x.byHost[s.Hostname] = byNS
		}
		if existing := byNS[ns]; existing == nil ||
			(existing.Attributes.ServiceRegistry != Kubernetes && s.Attributes.ServiceRegistry == Kubernetes) {
			byNS[ns] = s
		}
	}
	sort.Strings(x.reversed)
	return x
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// withSuffix returns the hostnames ending in suffix, from the reversed
// index: O(log S + matches).
func (x *serviceIndex) withSuffix(suffix string) []string {
	rs := reverse(suffix)
	i := sort.SearchStrings(x.reversed, rs)
	var out []string
	for ; i < len(x.reversed) && strings.HasPrefix(x.reversed[i], rs); i++ {
		out = append(out, reverse(x.reversed[i]))
	}
	return out
}

// candidatesFor returns the services a proxy in ns may see whose hostname
// one of the names can match (exact names, or "*.suffix" wildcards), in the
// order exportedToNamespace gives them; ok is false when a name is "*"
// (every service: use exportedToNamespace). The cost depends on the names
// and their matches, not on the number of services.
func (x *serviceIndex) candidatesFor(names []string, ns string) ([]*Service, bool) {
	seen := map[string]bool{}
	var hosts []string
	for _, n := range names {
		switch {
		case n == "*":
			return nil, false
		case strings.HasPrefix(n, "*"):
			for _, h := range x.withSuffix(n[1:]) {
				if !seen[h] {
					seen[h] = true
					hosts = append(hosts, h)
				}
			}
		case !seen[n]:
			seen[n] = true
			hosts = append(hosts, n)
		}
	}
	var out []*Service
	for _, h := range hosts {
		for _, s := range x.byHostAll[h] {
			if x.visible(s, ns) {
				out = append(out, s)
			}
		}
	}
	// exportedToNamespace's order: privately exported services of ns
	// itself, then of other namespaces, then public ones; oldest first
	group := func(s *Service) int {
		switch {
		case x.visibilityOf[s].public:
			return 2
		case s.Attributes.Namespace == ns:
			return 0
		}
		return 1
	}
	slices.SortStableFunc(out, func(a, b *Service) int { return group(a) - group(b) })
	return out, true
}

// compareServices orders services oldest first, then by hostname and
// namespace.
func compareServices(a, b *Service) int {
	if c := a.CreationTime.Compare(b.CreationTime); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Hostname, b.Hostname); c != 0 {
		return c
	}
	return cmp.Compare(a.Attributes.Namespace, b.Attributes.Namespace)
}

// visible reports whether a proxy in namespace ns may see s.
func (x *serviceIndex) visible(s *Service, ns string) bool {
	vis, ok := x.visibilityOf[s]
	if !ok {
		vis = exportSetOf(s.Attributes.ExportTo, s.Attributes.Namespace, x.defaultExport)
	}
	return vis.visibleTo(ns)
}

// exportedToNamespace returns the services a proxy in ns may see: those
// exported to ns (its own first), then the public ones. Hostnames may
// repeat across namespaces.
func (x *serviceIndex) exportedToNamespace(ns string) []*Service {
	local := x.exportedTo[ns]
	out := make([]*Service, 0, len(local)+len(x.public))
	for _, s := range local {
		if s.Attributes.Namespace == ns {
			out = append(out, s)
		}
	}
	for _, s := range local {
		if s.Attributes.Namespace != ns {
			out = append(out, s)
		}
	}
	return append(out, x.public...)
}

// forHostname returns the service named hostname a proxy in ns sees: the
// one of its own namespace, else the first visible namespace in
// alphabetical order. nil when none is visible.
func (x *serviceIndex) forHostname(hostname, ns string) *Service {
	byNS := x.byHost[hostname]
	if s, ok := byNS[ns]; ok && x.visible(s, ns) {
		return s
	}
	namespaces := make([]string, 0, len(byNS))
	for n, s := range byNS {
		if x.visible(s, ns) {
			namespaces = append(namespaces, n)
		}
	}
	if len(namespaces) == 0 {
		return nil
	}
	sort.Strings(namespaces)
	return byNS[namespaces[0]]
}

// Services returns every service, oldest first (shared, read-only).
func (p *PushContext) Services() []*Service { return p.services.all }

// ServiceCount is the number of services (the pilot_services gauge).
func (p *PushContext) ServiceCount() int { return len(p.services.all) }

// ServiceForHostnameAndNamespace returns the service of one namespace.
func (p *PushContext) ServiceForHostnameAndNamespace(hostname, namespace string) *Service {
	return p.services.byHost[hostname][namespace]
}

// ServicesForHostname returns the services named hostname in every
// namespace, by namespace.
func (p *PushContext) ServicesForHostname(hostname string) []*Service {
	byNS := p.services.byHost[hostname]
	out := make([]*Service, 0, len(byNS))
	for _, s := range byNS {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *Service) int { return cmp.Compare(a.Attributes.Namespace, b.Attributes.Namespace) })
	return out
}

// IsServiceVisible reports whether a proxy in namespace ns may see s
// (exportTo, with the mesh default when unset).
func (p *PushContext) IsServiceVisible(s *Service, ns string) bool { return p.services.visible(s, ns) }

// ServicesExportedToNamespace returns every service a proxy in ns may see,
// before any Sidecar narrows the view (shared services, fresh slice).
func (p *PushContext) ServicesExportedToNamespace(ns string) []*Service {
	return p.services.exportedToNamespace(ns)
}

// ServicesForProxy returns the services in the proxy's sidecar scope:
// every visible service under the default scope, hostnames unique.
func (p *PushContext) ServicesForProxy(proxy *Proxy) []*Service {
	return p.SidecarScope(proxy).Services()
}

// ServiceForHostname returns the service named hostname in the proxy's
// sidecar scope; without a proxy, the service of the first namespace in
// alphabetical order.
func (p *PushContext) ServiceForHostname(proxy *Proxy, hostname string) *Service {
	if proxy != nil {
		return p.SidecarScope(proxy).Service(hostname)
	}
	if all := p.ServicesForHostname(hostname); len(all) > 0 {
		return all[0]
	}
	return nil
}
