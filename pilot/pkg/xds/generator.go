package xds

import (
	"maps"
	"sync"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// Envoy v3 type URLs.
const (
	ClusterType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	EndpointType = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	ListenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"
	RouteType    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	SecretType   = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"

	// AddressType and AuthorizationType are the workload API ztunnel
	// subscribes to (ambient).
	AddressType       = "type.googleapis.com/istio.workload.Address"
	AuthorizationType = "type.googleapis.com/istio.security.Authorization"
)

// pushOrder is the order types are pushed in: clusters before their
// endpoints, listeners before their routes; other types after.
var pushOrder = []string{ClusterType, EndpointType, ListenerType, RouteType, SecretType}

// ShortType names a type URL in logs and metric labels (cds, eds, lds, rds).
func ShortType(typeURL string) string {
	switch typeURL {
	case ClusterType:
		return "cds"
	case EndpointType:
		return "eds"
	case ListenerType:
		return "lds"
	case RouteType:
		return "rds"
	case SecretType:
		return "sds"
	case AddressType:
		return "wds"
	case AuthorizationType:
		return "wads"
	}
	return typeURL
}

// isWildcardType reports whether an empty subscription means "everything"
// for the type (clusters and listeners, as the xDS protocol defines, and
// the workload API, whose first empty request ztunnel means as wildcard).
func isWildcardType(typeURL string) bool {
	return typeURL == ClusterType || typeURL == ListenerType || typeURL == AddressType || typeURL == AuthorizationType
}

// WatchedResource is what one connection watches of one type, and what was
// last sent and acknowledged.
type WatchedResource struct {
	TypeURL string
	// ResourceNames subscribed; empty with Wildcard means all. Read-only:
	// the map is shared with other connections subscribed to the same
	// names (names holds it).
	ResourceNames map[string]struct{}
	names         *nameSet
	Wildcard      bool

	VersionSent string
	NonceSent   string
	NonceAcked  string
	// LastNACK is the error detail of the last rejected response ("" when
	// the last response was accepted).
	LastNACK string
	// LastSent is when the last response of the type was sent.
	LastSent time.Time
	// generatedFrom is the Seq of the snapshot the last push or answer
	// of the type was generated from, whether or not anything was sent
	// (0: never generated).
	generatedFrom uint64
	// sent holds, for delta streams, the version of every resource the
	// client holds: shared with other connections, never changed in place.
	sent *sentVersions
	// Held are the resources the last push left as the client holds them
	// because they failed validation, with the reason (see Generated).
	Held map[string]string
	// last is, for state-of-the-world wildcard types, the resources of the
	// last response: a held resource is resent as it was.
	last []*discovery.Resource
}

// clone copies w, maps included (sent is immutable: shared).
func (w *WatchedResource) clone() *WatchedResource {
	cp := *w
	cp.ResourceNames = maps.Clone(w.ResourceNames)
	cp.Held = maps.Clone(w.Held)
	return &cp
}

// setNames installs a subscription, shared with any equal one; m is
// given up.
func (w *WatchedResource) setNames(m map[string]struct{}) {
	w.names = watchedSets.intern(m)
	w.ResourceNames = w.names.all()
}

// Names returns the subscribed names (nil for wildcard).
func (w *WatchedResource) Names() []string {
	if w.Wildcard {
		return nil
	}
	out := make([]string, 0, len(w.ResourceNames))
	for n := range w.ResourceNames {
		out = append(out, n)
	}
	return out
}

// Generator builds the resources of one type for one proxy. It must be pure:
// its output depends only on the proxy, the watch and the request's
// PushContext. It returns the full set the proxy should have (for a named
// watch, the subset it asked for); the server computes deltas. The
// resources may be shared with the generator's caches: nobody modifies
// them.
type Generator interface {
	Generate(proxy *model.Proxy, w *WatchedResource, req *model.PushRequest) (Generated, error)
}

// Generated is a generator's answer for one proxy and type.
type Generated struct {
	// Resources are the resources to send.
	Resources []*discovery.Resource
	// Held names resources that exist but could not be generated validly
	// this time (with the reason). They are not sent, and they are not
	// removed from the proxy either: it keeps its last valid copy (ours;
	// Istio sends them and the proxy rejects the whole response).
	Held []Held
	// Partial: Resources (and Held) are only what the push may have
	// changed; everything else the proxy holds of the type is unchanged
	// and stays (a state-of-the-world response leaves it out, a delta one
	// removes nothing). Only for types that are not wildcard: a
	// state-of-the-world listener or cluster response is always whole.
	Partial bool
}

// Held is a resource left as the proxy holds it, and why.
type Held struct {
	Name   string
	Reason string
}

// Append adds other's resources and held names to g.
func (g *Generated) Append(other Generated) {
	g.Resources = append(g.Resources, other.Resources...)
	g.Held = append(g.Held, other.Held...)
	g.Partial = g.Partial || other.Partial
}

// GeneratorFunc adapts a function to Generator.
type GeneratorFunc func(proxy *model.Proxy, w *WatchedResource, req *model.PushRequest) (Generated, error)

// Generate implements Generator.
func (f GeneratorFunc) Generate(p *model.Proxy, w *WatchedResource, req *model.PushRequest) (Generated, error) {
	return f(p, w, req)
}

// generators is the registry: by type URL, optionally scoped to a node
// metadata GENERATOR name (e.g. "grpc"). A new type is registered from its own
// file; nothing switches on type URLs centrally.
type generators struct {
	mu sync.RWMutex
	m  map[string]Generator
}

func genKey(generatorName, typeURL string) string { return generatorName + "/" + typeURL }

func (g *generators) register(generatorName, typeURL string, gen Generator) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]Generator{}
	}
	g.m[genKey(generatorName, typeURL)] = gen
}

// nodeTypeKey is the registry name of the generators of a proxy type
// ("type:waypoint"; GENERATOR names in use, such as "grpc", have no colon).
func nodeTypeKey(t model.NodeType) string { return "type:" + string(t) }

// find returns the generator for a proxy: its GENERATOR's first, then its
// proxy type's, then the default.
func (g *generators) find(proxy *model.Proxy, typeURL string) Generator {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if name := proxy.GeneratorName(); name != "" {
		if gen, ok := g.m[genKey(name, typeURL)]; ok {
			return gen
		}
	}
	if proxy.Type != "" {
		if gen, ok := g.m[genKey(nodeTypeKey(proxy.Type), typeURL)]; ok {
			return gen
		}
	}
	return g.m[genKey("", typeURL)]
}
