package xds

import (
	"sync"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// resourceCache keeps generated resources that are the same for every proxy
// of a namespace, for the life of one PushContext: the outbound clusters of
// a service and the route configuration of a port. A new PushContext (every
// full push) starts an empty cache, so nothing outlives the snapshot it was
// built from. Endpoint-only pushes keep the snapshot and regenerate EDS only,
// which is not cached.
type resourceCache struct {
	mu      sync.Mutex
	push    *model.PushContext
	entries map[cacheKey][]*discovery.Resource
}

type cacheKey struct {
	typeURL   string
	namespace string
	name      string
}

// get returns the cached resources for key under push, building them with
// build on a miss. The returned slice is shared: callers must not modify it.
func (c *resourceCache) get(push *model.PushContext, key cacheKey, build func() []*discovery.Resource) []*discovery.Resource {
	c.mu.Lock()
	if c.push != push {
		c.push = push
		c.entries = map[cacheKey][]*discovery.Resource{}
	}
	if r, ok := c.entries[key]; ok {
		c.mu.Unlock()
		return r
	}
	c.mu.Unlock()
	r := build()
	c.mu.Lock()
	if c.push == push {
		c.entries[key] = r
	}
	c.mu.Unlock()
	return r
}
