package generators

import (
	"sort"
	"sync"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/ambient"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// WorkloadSource is what the workload API is served from: the ambient
// index's collections.
type WorkloadSource interface {
	Addresses() krt.Collection[ambient.Address]
	Authorizations() krt.Collection[ambient.Authorization]
}

// WorkloadGenerators serve ztunnel the workload API (delta ADS):
// istio.workload.Address and istio.security.Authorization, wildcard or by
// name. Each resource is encoded once per version of its object and shared
// by every ztunnel; the server sends each client only what changed since
// what it holds (initial_resource_versions on reconnect included) and
// removes what no longer exists.
type WorkloadGenerators struct {
	Source WorkloadSource

	addresses      encodedCache
	authorizations encodedCache
}

// Register installs the generators of both types.
func (g *WorkloadGenerators) Register(s *xds.DiscoveryServer) {
	s.RegisterGenerator(xds.AddressType, xds.GeneratorFunc(g.generateAddresses))
	s.RegisterGenerator(xds.AuthorizationType, xds.GeneratorFunc(g.generateAuthorizations))
}

func (g *WorkloadGenerators) generateAddresses(_ *model.Proxy, w *xds.WatchedResource, _ *model.PushRequest) (xds.Generated, error) {
	return generateNamed(g.Source.Addresses(), &g.addresses, w, func(a ambient.Address) (string, proto.Message) { return a.Name, a.Proto }), nil
}

func (g *WorkloadGenerators) generateAuthorizations(_ *model.Proxy, w *xds.WatchedResource, _ *model.PushRequest) (xds.Generated, error) {
	return generateNamed(g.Source.Authorizations(), &g.authorizations, w,
		func(a ambient.Authorization) (string, proto.Message) { return a.Name, a.Proto }), nil
}

// generateNamed is every object of c a watch asks for (all, for a
// wildcard one), encoded through cache, sorted by name.
func generateNamed[T any](c krt.Collection[T], cache *encodedCache, w *xds.WatchedResource, of func(T) (string, proto.Message)) xds.Generated {
	all := c.List()
	out := make([]*discovery.Resource, 0, len(all))
	live := make(map[string]struct{}, len(all))
	for _, o := range all {
		name, m := of(o)
		live[name] = struct{}{}
		if !w.Wildcard {
			if _, ok := w.ResourceNames[name]; !ok {
				continue
			}
		}
		out = append(out, cache.resource(name, m))
	}
	if w.Wildcard {
		cache.forgetAllBut(live)
	}
	sortByName(out)
	return xds.Generated{Resources: out}
}

func sortByName(rs []*discovery.Resource) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
}

// encodedCache holds each resource's encoding for the object it was made
// from: the index's objects are immutable, so a new object is a new
// version and the old encoding goes.
type encodedCache struct {
	mu sync.Mutex
	m  map[string]encoded
}

type encoded struct {
	from proto.Message
	res  *discovery.Resource
}

func (c *encodedCache) resource(name string, m proto.Message) *discovery.Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[name]; ok && e.from == m {
		return e.res
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		// a message the index built always marshals; an empty one keeps
		// the stream alive
		b = nil
	}
	r := &discovery.Resource{Name: name, Version: xds.ContentVersion(b),
		Resource: &anypb.Any{TypeUrl: "type.googleapis.com/" + string(m.ProtoReflect().Descriptor().FullName()), Value: b}}
	if c.m == nil {
		c.m = map[string]encoded{}
	}
	c.m[name] = encoded{from: m, res: r}
	return r
}

// forgetAllBut drops the encodings of objects that no longer exist.
func (c *encodedCache) forgetAllBut(live map[string]struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n := range c.m {
		if _, ok := live[n]; !ok {
			delete(c.m, n)
		}
	}
}
