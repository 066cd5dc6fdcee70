package generators

import (
	"strings"
	"sync"
	"sync/atomic"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/route"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// A sidecar's route configuration of a port is one virtual host per
// service it sees there plus the catch-all, and in a large mesh it is
// hundreds of kilobytes that every route scope (sidecar scope, namespace,
// selected labels) builds, validates and encodes for itself, again after
// every VirtualService edit. Yet a virtual host depends on little: its
// service, the VirtualService for it, a few proxy properties and the
// lookups its routes make. So each one is built, validated and encoded
// once per such key and kept as bytes, and a configuration's encoding is
// spliced from them:
//
// The deterministic encoding writes a message's fields in field-number
// order, a repeated message field as tag, length and the element's own
// deterministic encoding each. A RouteConfiguration is name (1), then
// virtual_hosts (2), then fields numbered higher, so its encoding is that
// of a configuration holding only its name, then tag 2, length and bytes
// of each virtual host, then the encoding of the configuration without its
// name and hosts. TestAssembledRoutesMatchFullBuilds holds this to the
// byte over every golden case and reference mesh.
//
// Validation splits the same way: ValidateAll of a configuration is that
// of its own fields and of each virtual host, and the regex walk visits
// each host in turn. When any part fails, the configuration takes the full
// path, whose held resource names the failing host by its index exactly
// as before.

// vhostKey is everything a virtual host's content depends on besides the
// lookups its routes make (vhostDeps): what BuildVirtualHost reads of its
// options, the service and the VirtualService.
type vhostKey struct {
	// hostname and domains are all it reads of the service: its name
	// and default route, and the names it answers to from the proxy
	// (which depend on the proxy's namespace, the domain suffix and the
	// service's virtual IPs), joined. Not the service's pointer: a sidecar
	// scope may hold a copy of its own of a service (one merged with the
	// ports a VirtualService sends to), made afresh with each scope.
	hostname, domains string
	port              int
	// hostOnly: a VirtualService host without a service (see
	// route.ServiceRoutes)
	hostOnly bool
	// hasVS tells a VirtualService applies (even one without HTTP routes
	// for the port: the host then has none, not the default route); vs is
	// its spec, immutable and held by the key so the pointer stays unique,
	// with what the routes read of the VirtualService beyond its spec.
	// The VirtualService index keeps the resolved spec of an unchanged
	// object across rebuilds; a changed or merged one is a new spec.
	hasVS bool
	vs    vsIdentity
	// sourceLabels says which matches the proxy's labels select
	sourceLabels string
	gateway      string
	meshRetry    *networking.HTTPRetry
}

// vhostDeps are the lookups a virtual host's build made, with what they
// returned: for each destination host, the port of its service when it has
// a single one (all routes read of the service) and its DestinationRule
// (hashes), as the proxy sees them. A host built for one proxy serves
// another whose lookups return the same.
type vhostDeps struct {
	ports []portDep
	rules []ruleDep
}

type portDep struct {
	host string
	port int
	ok   bool
}

type ruleDep struct {
	host string
	rule *networking.DestinationRule
}

// vhostLookups are the proxy's answers to those lookups.
type vhostLookups struct {
	service func(host string) *model.Service
	rule    func(host string) *networking.DestinationRule
}

// holdFor tells whether every lookup gives the proxy what it gave the
// build. Rules are immutable, and a cached entry keeps the pointers
// alive, so an equal pointer is the same rule.
func (d *vhostDeps) holdFor(l vhostLookups) bool {
	for _, s := range d.ports {
		if p, ok := route.SinglePort(l.service(s.host)); p != s.port || ok != s.ok {
			return false
		}
	}
	for _, r := range d.rules {
		if l.rule(r.host) != r.rule {
			return false
		}
	}
	return true
}

// recording are options whose lookups also note what they returned.
func recording(base route.Options, l vhostLookups, d *vhostDeps) route.Options {
	o := base
	o.LookupService = func(h string) *model.Service {
		svc := l.service(h)
		for _, s := range d.ports {
			if s.host == h {
				return svc
			}
		}
		p, ok := route.SinglePort(svc)
		d.ports = append(d.ports, portDep{host: h, port: p, ok: ok})
		return svc
	}
	hashesFrom(&o, func(h string) *networking.DestinationRule {
		r := l.rule(h)
		for _, x := range d.rules {
			if x.host == h {
				return r
			}
		}
		d.rules = append(d.rules, ruleDep{host: h, rule: r})
		return r
	})
	return o
}

// vhostEntry is a built virtual host: its deterministic encoding, or why
// it cannot be sent (failed validation or encoding); none when there is
// no virtual host (a HostOnly host whose VirtualService leaves no route
// for the port).
type vhostEntry struct {
	deps vhostDeps
	enc  []byte
	err  error
	none bool
}

// vhostCache holds the encoded virtual hosts of sidecar route
// configurations, for the newest snapshot, with those of the one before
// taken over when carryVirtualHosts allows. Under one key it holds a
// variant per distinct set of lookup answers (proxies whose scopes resolve
// a destination to different services or rules). Generation from an older
// snapshot builds without reading or writing it. Entries are shared and
// read-only.
type vhostCache struct {
	mu      sync.Mutex
	seq     uint64
	entries map[vhostKey][]*vhostEntry
	prev    map[vhostKey][]*vhostEntry
	// domains memoises route.Domains, joined, which the key holds: it is
	// a pure function of an immutable service and of the proxy's
	// namespace, and computing it for every host of every scope costs
	// more than the rest of a hit (prevDomains: the snapshot before's)
	domains, prevDomains map[domainsKey]string
	// assemblies are, per route configuration (its cache key), the hosts
	// its last assembly under this snapshot took, by hostname;
	// prevAssemblies those of the snapshot before, taken over with its
	// entries (see assembledRoutes)
	assemblies, prevAssemblies map[cacheKey]map[string]assembledHost
	// builds counts the virtual hosts built, gets those looked up by key
	// (tests)
	builds, gets atomic.Int64
}

// assembledHost is a virtual host an assembly took: the service and
// VirtualService it was asked for, and the entry.
type assembledHost struct {
	svc *model.Service
	vs  vsIdentity
	e   *vhostEntry
}

// vsIdentity is what a virtual host reads of its VirtualService: the
// resolved spec (one per version of the object; the configs around it are
// copied per proxy) and its name (operations, metadata), namespace and
// group version (metadata) and route semantics annotation.
type vsIdentity struct {
	spec                                    *networking.VirtualService
	name, namespace, groupVersion, semantic string
}

func identityOf(vs *config.Config) vsIdentity {
	if vs == nil {
		return vsIdentity{}
	}
	spec, _ := vs.Spec.(*networking.VirtualService)
	return vsIdentity{spec: spec, name: vs.Name, namespace: vs.Namespace, groupVersion: vs.GroupVersionKind.GroupVersion(),
		semantic: vs.Annotations[route.RouteSemanticsAnnotation]}
}

type domainsKey struct {
	svc                          *model.Service
	port                         int
	proxyNamespace, domainSuffix string
	// what picks the service's addresses among the domains
	clusterID     string
	ipMode        model.IPMode
	autoAllocated bool
}

// kindsKeepingVirtualHosts are the kinds whose changes cannot turn a
// cached virtual host wrong: a VirtualService change gives new specs (new
// keys), a DestinationRule change new rules (the lookups no longer hold),
// and the others are never read by routes. Services, Sidecars, EnvoyFilters
// and the mesh configuration are left out, to stay on the safe side.
var kindsKeepingVirtualHosts = []kind.Kind{kind.VirtualService, kind.DestinationRule, kind.Gateway,
	kind.AuthorizationPolicy, kind.RequestAuthentication, kind.Telemetry, kind.WasmPlugin}

func carryVirtualHosts(push *model.PushContext, prevSeq uint64) bool {
	return push.ChangedOnlySince(prevSeq, kindsKeepingVirtualHosts)
}

// get returns the virtual host of sr on the port, as the proxy with
// options o and lookups l sees it, building it on a miss.
func (c *vhostCache) get(push *model.PushContext, sr route.ServiceRoutes, port int, o route.Options, l vhostLookups, build func(*vhostDeps) *vhostEntry) *vhostEntry {
	c.gets.Add(1)
	seq := push.Seq()
	dk := domainsKey{svc: sr.Service, port: port, proxyNamespace: o.ProxyNamespace, domainSuffix: o.DomainSuffix,
		clusterID: o.ClusterID, ipMode: o.IPMode, autoAllocated: o.AutoAllocated}
	c.mu.Lock()
	if !c.use(push) {
		c.mu.Unlock()
		return c.build(build)
	}
	domains, current := c.domains[dk]
	if sr.HostOnly {
		// one name, and the service is made afresh for each build: not
		// worth memoising by its pointer
		domains, current = strings.ToLower(sr.Service.Hostname), true
	} else if !current {
		var known bool
		if domains, known = c.prevDomains[dk]; !known {
			c.mu.Unlock()
			domains = strings.Join(route.Domains(sr.Service, port, o), "\x00")
			c.mu.Lock()
		}
	}
	if !current && !sr.HostOnly && c.seq == seq {
		c.domains[dk] = domains
	}
	key := virtualHostKey(sr, port, o, domains)
	cur, old := c.entries[key], c.prev[key]
	c.mu.Unlock()
	// the lookups are the snapshot's, read-only: checked without the lock
	for _, e := range cur {
		if e.deps.holdFor(l) {
			return e
		}
	}
	var e *vhostEntry
	for _, o := range old {
		if o.deps.holdFor(l) {
			e = o
			break
		}
	}
	if e == nil {
		e = c.build(build)
	}
	c.mu.Lock()
	if c.seq == seq {
		c.entries[key] = append(c.entries[key], e)
	}
	c.mu.Unlock()
	return e
}

// use makes push's snapshot the cache's when it is newer, taking over the
// entries of the one before when carryVirtualHosts allows; it answers
// false for an older snapshot, which the cache does not serve. c.mu held.
func (c *vhostCache) use(push *model.PushContext) bool {
	seq := push.Seq()
	switch {
	case c.entries == nil || seq > c.seq:
		c.prev, c.prevDomains, c.prevAssemblies = nil, nil, nil
		if c.entries != nil && carryVirtualHosts(push, c.seq) {
			c.prev, c.prevDomains, c.prevAssemblies = c.entries, c.domains, c.assemblies
		}
		c.seq = seq
		c.entries = make(map[vhostKey][]*vhostEntry, len(c.prev))
		c.domains = make(map[domainsKey]string, len(c.prevDomains))
		c.assemblies = make(map[cacheKey]map[string]assembledHost, len(c.prevAssemblies))
	case seq < c.seq:
		return false
	}
	return true
}

// lastAssembly is what the last assembly of the route configuration under
// key took, in push's snapshot or the one before (nil: none, or push is
// older than the cache's snapshot).
func (c *vhostCache) lastAssembly(push *model.PushContext, key cacheKey) map[string]assembledHost {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.use(push) {
		return nil
	}
	if a, ok := c.assemblies[key]; ok {
		return a
	}
	return c.prevAssemblies[key]
}

// remember records what an assembly under push's snapshot took.
func (c *vhostCache) remember(push *model.PushContext, key cacheKey, hosts map[string]assembledHost) {
	c.mu.Lock()
	if c.seq == push.Seq() && c.assemblies != nil {
		c.assemblies[key] = hosts
	}
	c.mu.Unlock()
}

func (c *vhostCache) build(build func(*vhostDeps) *vhostEntry) *vhostEntry {
	c.builds.Add(1)
	var d vhostDeps
	e := build(&d)
	e.deps = d
	return e
}

// encodeChecked is the deterministic encoding of a route message once it
// passed the checks toResources makes (its own validation, the regex
// walk), or the first failure.
func encodeChecked(m validated) ([]byte, error) {
	if err := m.ValidateAll(); err != nil {
		return nil, err
	}
	if err := checkBeyondValidation(m); err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

// assembledRoutes is the route configuration of a port assembled from
// cached virtual hosts: the same resource, to the byte, as
// toResources(route.BuildRouteConfiguration(port, srs, opts)). It answers
// false when some part fails its checks: the caller then builds the whole
// configuration, which holds it with the reason it always gave.
//
// Proxies under one cache key share their options, so the hosts the last
// assembly under the key took serve again, without computing their keys,
// for the services and VirtualServices that did not change, as long as
// their lookups still hold: a VirtualService change then costs the hosts
// it touches.
func (g *SidecarGenerators) assembledRoutes(push *model.PushContext, proxy *model.Proxy, key cacheKey, port int, srs []route.ServiceRoutes, opts route.Options) (xds.Generated, bool) {
	rc := route.NewRouteConfiguration(port)
	if err := rc.ValidateAll(); err != nil {
		return xds.Generated{}, false
	}
	name := rc.Name
	head, err := proto.MarshalOptions{Deterministic: true}.Marshal(&routev3.RouteConfiguration{Name: name})
	if err != nil {
		return xds.Generated{}, false
	}
	rc.Name = ""
	tail, err := encodeChecked(rc)
	if err != nil {
		return xds.Generated{}, false
	}
	catchAll, err := encodeChecked(opts.CatchAll())
	if err != nil {
		return xds.Generated{}, false
	}

	route.SortServiceRoutes(srs)
	// the lookups the options make, as the options make them
	l := vhostLookups{service: opts.LookupService, rule: routeRules(push, proxy)}
	if l.service == nil {
		l.service = func(string) *model.Service { return nil }
	}
	last := g.vhosts.lastAssembly(push, key)
	took := make(map[string]assembledHost, len(srs))
	hosts := make([][]byte, 0, len(srs)+1)
	size := len(head) + len(tail)
	for _, sr := range srs {
		vs := identityOf(sr.VirtualService)
		h, ok := last[sr.Service.Hostname]
		if !ok || h.svc != sr.Service || h.vs != vs || !h.e.deps.holdFor(l) {
			h = assembledHost{svc: sr.Service, vs: vs, e: g.vhosts.get(push, sr, port, opts, l, func(d *vhostDeps) *vhostEntry {
				vh := route.BuildVirtualHost(sr, port, recording(opts, l, d))
				if vh == nil {
					return &vhostEntry{none: true}
				}
				enc, err := encodeChecked(vh)
				return &vhostEntry{enc: enc, err: err}
			})}
		}
		e := h.e
		if e.err != nil {
			return xds.Generated{}, false
		}
		if _, dup := took[sr.Service.Hostname]; !dup {
			took[sr.Service.Hostname] = h
		}
		if e.none {
			continue
		}
		hosts = append(hosts, e.enc)
		size += protowire.SizeTag(2) + protowire.SizeBytes(len(e.enc))
	}
	hosts = append(hosts, catchAll)
	size += protowire.SizeTag(2) + protowire.SizeBytes(len(catchAll))

	b := make([]byte, 0, size)
	b = append(b, head...)
	for _, h := range hosts {
		b = protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), h)
	}
	b = append(b, tail...)
	g.vhosts.remember(push, key, took)
	return xds.Generated{Resources: []*discovery.Resource{g.enc.NewResource(xds.RouteType, name, b)}}, true
}

// virtualHostKey keys the virtual host of one service on the port.
func virtualHostKey(sr route.ServiceRoutes, port int, o route.Options, domains string) vhostKey {
	k := vhostKey{hostname: sr.Service.Hostname, domains: domains, port: port, hostOnly: sr.HostOnly,
		gateway: o.Gateway, meshRetry: o.MeshRetry}
	if vs := sr.VirtualService; vs != nil {
		k.hasVS = true
		k.vs = identityOf(vs)
		k.sourceLabels = route.SourceLabelsKey(k.vs.spec, o.ProxyLabels, o.ProxyNamespace)
	}
	return k
}
