package generators

import (
	"runtime"
	"sync"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// snapshotCache keeps generated resources shared by every proxy that maps
// to the same key, for the life of one PushContext: the outbound clusters
// of a service under one destination rule, the outbound listeners of a
// sidecar scope, the route configuration of a port, the load assignment of
// a cluster. The newest snapshot owns the cache: a newer one starts it
// empty, so nothing outlives the snapshot it was built from, and
// generation from an older one (a connection still finishing its push)
// builds without reading or writing it. Each entry also carries the
// version of the input it was built from beyond the snapshot (the endpoint
// index version for load assignments, 0 otherwise): a different version is
// a miss, and an older build never replaces a newer one. A cache may carry
// entries over from one snapshot to the next when the changes between them
// cannot have changed those entries (see carry).
type snapshotCache[K comparable] struct {
	mu      sync.Mutex
	seq     uint64 // of the snapshot the entries belong to
	entries map[K]cacheEntry
	// building are the builds in progress for the snapshot: a proxy that
	// misses while another builds the same entry waits for that build
	// rather than building its own copy (after a push, the proxies of a
	// scope all miss at once, and each copy of a route configuration under
	// construction is megabytes of protos)
	building map[K]*cacheBuild
	// prev are the entries of the snapshot before, when a carry function
	// allowed the current one to take them over (on first use), until the
	// next snapshot.
	prev map[K]cacheEntry
}

// carryFunc tells whether the snapshot push may take over the entries of
// the one numbered prevSeq.
type carryFunc func(push *model.PushContext, prevSeq uint64) bool

type cacheEntry struct {
	version uint64
	res     xds.Generated
}

type cacheBuild struct {
	version uint64
	done    chan struct{}
	res     xds.Generated // set before done is closed
}

// buildSlots bound the cache builds running at once to the cores the
// process may use. Builds are CPU work (translation, marshalling,
// validation) and never wait for each other, so more of them at once
// finish no sooner; but each holds its protos under construction (a route
// configuration of a large mesh is megabytes of them), and after a push the
// proxies of every scope miss at once: without a bound the live heap of a
// push is that of every scope's build together, and the garbage collector's
// goal, and with it the resident memory, follows that peak. One set of
// generators owns one (all its caches share it); the zero value is ready,
// and nil bounds nothing.
type buildSlots struct {
	once sync.Once
	ch   chan struct{}
}

func (b *buildSlots) acquire() {
	if b == nil {
		return
	}
	b.once.Do(func() { b.ch = make(chan struct{}, max(runtime.GOMAXPROCS(0), 1)) })
	b.ch <- struct{}{}
}

func (b *buildSlots) release() {
	if b != nil {
		<-b.ch
	}
}

// get returns the resources cached for key at version under push, building
// them on a miss (within slots). The returned value is shared: callers must not modify it.
func (c *snapshotCache[K]) get(slots *buildSlots, push *model.PushContext, key K, version uint64, build func() xds.Generated) xds.Generated {
	return c.getCarried(slots, push, key, version, nil, build)
}

// getCarried is get for a cache whose entries a newer snapshot may take
// over from the one before when carry says so (nil: never).
func (c *snapshotCache[K]) getCarried(slots *buildSlots, push *model.PushContext, key K, version uint64, carry carryFunc, build func() xds.Generated) xds.Generated {
	seq := push.Seq()
	c.mu.Lock()
	switch {
	case c.entries == nil || seq > c.seq:
		// only the last snapshot's entries: what it did not take over from
		// its own predecessor was not needed under it
		c.prev = nil
		if carry != nil && c.entries != nil && carry(push, c.seq) {
			c.prev = c.entries
		}
		c.seq = seq
		c.entries = map[K]cacheEntry{}
		c.building = map[K]*cacheBuild{}
	case seq < c.seq:
		c.mu.Unlock()
		return build()
	}
	if e, ok := c.entries[key]; ok && e.version == version {
		c.mu.Unlock()
		return e.res
	}
	if e, ok := c.prev[key]; ok && e.version == version {
		c.entries[key] = e
		c.mu.Unlock()
		return e.res
	}
	if b, ok := c.building[key]; ok && b.version == version {
		c.mu.Unlock()
		<-b.done
		return b.res
	}
	b := &cacheBuild{version: version, done: make(chan struct{})}
	c.building[key] = b
	c.mu.Unlock()
	defer close(b.done) // also if build panics: waiters get an empty answer, not a hang
	slots.acquire()
	b.res = func() xds.Generated {
		defer slots.release()
		return build()
	}()
	c.mu.Lock()
	if c.seq == seq {
		if e, ok := c.entries[key]; !ok || e.version <= version {
			c.entries[key] = cacheEntry{version: version, res: b.res}
		}
		if c.building[key] == b {
			delete(c.building, key)
		}
	}
	c.mu.Unlock()
	return b.res
}

// cacheKey keys the clusters, listeners and routes a proxy shares with
// others.
type cacheKey struct {
	typeURL string
	// namespace is the part of the proxy the resource depends on (its
	// sidecar scope, or namespace and labels), "" when none
	namespace string
	// rule is the destination rule the resource was built with (nil: none)
	rule *model.ConsolidatedDestRule
	name string
	// patches is the Key of the EnvoyFilter patches applied ("" none)
	patches string
}

// edsKey keys a load assignment.
type edsKey struct {
	cluster string
	// svc is the service the proxy's sidecar scope resolves the cluster's
	// host to. It stands for the scope: an assignment depends on the scope
	// only through the service (and rule) it picks, so proxies of every
	// namespace that see the same service share one assignment (a scope
	// that trims a service's ports sees a service of its own).
	svc      *model.Service
	rule     *model.ConsolidatedDestRule
	network  string
	locality string
	// local is the proxy's cluster for a cluster-local service ("" for
	// the others, whose endpoints are those of every cluster)
	local string
	// gateways are the snapshot's network gateways (the same pointer while
	// they do not change); with some, endpoints of other networks are
	// replaced by gateways the proxy's IP family (ipMode) and type
	// (sidecar) can use
	gateways *model.NetworkGateways
	ipMode   model.IPMode
	sidecar  bool
	// networkView is the proxy's REQUESTED_NETWORK_VIEW, comma-joined
	networkView string
}
