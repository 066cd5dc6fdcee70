package model

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// This file holds the endpoint index: the endpoints of every service, sharded
// by hostname, namespace and the registry instance (shard) they come from.
//
// Consistency contract: a shard's endpoint list is replaced wholesale by
// UpdateServiceEndpoints, and the lists (and the endpoints in them) are never
// modified afterwards, so a reader holding a snapshot keeps a consistent view
// while writers move on. Updates of different services never contend beyond
// the index lock, which writers hold for the (short) update of one service.

// ShardKey names the registry instance endpoints come from.
type ShardKey struct {
	Provider ProviderID
	Cluster  string
}

// NewShardKey builds the shard key of a registry instance.
func NewShardKey(provider ProviderID, cluster string) ShardKey {
	return ShardKey{Provider: provider, Cluster: cluster}
}

// String renders "<provider>/<cluster>", e.g. "Kubernetes/Kubernetes".
func (k ShardKey) String() string { return string(k.Provider) + "/" + k.Cluster }

// PushType is what a change of the index asks of the push engine.
type PushType int

// Push types.
const (
	// NoPush: nothing a proxy sees changed.
	NoPush PushType = iota
	// IncrementalPush: endpoints changed; an EDS push of the service is enough.
	IncrementalPush
	// FullPush: the service is new to the index or its service accounts
	// changed; clusters (and more) must be recomputed.
	FullPush
)

func (p PushType) String() string {
	switch p {
	case NoPush:
		return "none"
	case IncrementalPush:
		return "incremental"
	case FullPush:
		return "full"
	}
	return "unknown"
}

// EndpointShards are the endpoints of one service from every shard.
type EndpointShards struct {
	mu              sync.RWMutex
	shards          map[ShardKey][]*IstioEndpoint
	serviceAccounts map[string]struct{}
	// version changes with every write; versions are unique across all
	// shards of every index, so a service deleted and created again never
	// repeats one.
	version uint64
}

// shardVersions hands out EndpointShards versions.
var shardVersions atomic.Uint64

// touchLocked marks a write. The caller holds mu.
func (s *EndpointShards) touchLocked() { s.version = shardVersions.Add(1) }

// Ordered returns every endpoint of the service, shard by shard in shard key
// order, and the version they are at: the same version always comes with
// the same endpoints, so what is built from them can be cached by it. The
// endpoints are shared and read-only.
func (s *EndpointShards) Ordered() ([]*IstioEndpoint, uint64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := make([]ShardKey, 0, len(s.shards))
	n := 0
	for k, eps := range s.shards {
		keys = append(keys, k)
		n += len(eps)
	}
	slices.SortFunc(keys, func(a, b ShardKey) int { return strings.Compare(a.String(), b.String()) })
	out := make([]*IstioEndpoint, 0, n)
	for _, k := range keys {
		out = append(out, s.shards[k]...)
	}
	return out, s.version
}

// Version is the version Ordered would return, without building the list.
func (s *EndpointShards) Version() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.version
}

// ShardsView is a point-in-time copy of one service's shards: the map is the
// caller's, the endpoint lists are shared and read-only. Its JSON is that of
// Istio's /debug/endpointShardz.
type ShardsView struct {
	Shards          map[string][]*IstioEndpoint
	ServiceAccounts map[string]struct{}
}

// View copies the shards of the service.
func (s *EndpointShards) View() ShardsView {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := ShardsView{Shards: make(map[string][]*IstioEndpoint, len(s.shards)), ServiceAccounts: maps.Clone(s.serviceAccounts)}
	for k, eps := range s.shards {
		out.Shards[k.String()] = eps
	}
	if out.ServiceAccounts == nil {
		out.ServiceAccounts = map[string]struct{}{}
	}
	return out
}

// Endpoints returns the endpoints of one shard (shared, read-only).
func (s *EndpointShards) Endpoints(shard ShardKey) []*IstioEndpoint {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.shards[shard]
}

// ServiceAccounts returns the sorted identities of the service's endpoints.
func (s *EndpointShards) ServiceAccounts() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.serviceAccounts))
}

// recomputeServiceAccounts rebuilds the identity set from the endpoints and
// reports whether it changed. The caller holds mu.
func (s *EndpointShards) recomputeServiceAccounts() bool {
	next := map[string]struct{}{}
	for _, eps := range s.shards {
		for _, ep := range eps {
			if ep.ServiceAccount != "" {
				next[ep.ServiceAccount] = struct{}{}
			}
		}
	}
	changed := !maps.Equal(next, s.serviceAccounts)
	s.serviceAccounts = next
	return changed
}

// EndpointIndex holds the endpoints of every service by hostname, namespace
// and shard. The zero value is not usable; use NewEndpointIndex.
type EndpointIndex struct {
	mu       sync.RWMutex
	services map[string]map[string]*EndpointShards // hostname → namespace
}

// NewEndpointIndex returns an empty index.
func NewEndpointIndex() *EndpointIndex {
	return &EndpointIndex{services: map[string]map[string]*EndpointShards{}}
}

// ShardsFor returns the shards of a service.
func (x *EndpointIndex) ShardsFor(hostname, namespace string) (*EndpointShards, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s, ok := x.services[hostname][namespace]
	return s, ok
}

// getOrCreateLocked returns the shards of a service, creating them; the
// caller holds x.mu for writing.
func (x *EndpointIndex) getOrCreateLocked(hostname, namespace string) (*EndpointShards, bool) {
	byNS := x.services[hostname]
	if byNS == nil {
		byNS = map[string]*EndpointShards{}
		x.services[hostname] = byNS
	}
	if s, ok := byNS[namespace]; ok {
		return s, false
	}
	s := &EndpointShards{shards: map[ShardKey][]*IstioEndpoint{}, serviceAccounts: map[string]struct{}{}}
	byNS[namespace] = s
	return s, true
}

// UpdateServiceEndpoints replaces the endpoints of one service from one
// shard with eps, which the index keeps (callers must not modify it or its
// endpoints afterwards), and says what the change needs: FullPush when the
// service is new to the index or its service accounts changed,
// IncrementalPush when endpoints changed, NoPush otherwise. An empty eps
// removes the shard but keeps the service known, so that endpoints coming
// back later are an incremental change.
func (x *EndpointIndex) UpdateServiceEndpoints(shard ShardKey, hostname, namespace string, eps []*IstioEndpoint) PushType {
	if len(eps) == 0 {
		return x.deleteServiceShard(shard, hostname, namespace, true)
	}
	// Writers serialise on the index lock, so a concurrent delete of the
	// service cannot orphan the entry being written; readers only take it
	// to find an entry.
	x.mu.Lock()
	defer x.mu.Unlock()
	s, created := x.getOrCreateLocked(hostname, namespace)
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.shards[shard]
	changed := !had || endpointsChanged(old, eps)
	s.shards[shard] = eps
	s.touchLocked()
	saChanged := s.recomputeServiceAccounts()
	switch {
	case created || saChanged:
		return FullPush
	case changed:
		return IncrementalPush
	}
	return NoPush
}

// endpointsChanged reports whether a proxy would see a difference between
// two lists of a shard. A new endpoint that is unhealthy and not sent while
// unhealthy changes nothing by itself.
func endpointsChanged(old, cur []*IstioEndpoint) bool {
	byKey := make(map[string]*IstioEndpoint, len(old))
	for _, ep := range old {
		byKey[ep.Key()] = ep
	}
	seen := 0
	for _, ep := range cur {
		prev, ok := byKey[ep.Key()]
		if !ok {
			if ep.HealthStatus != UnHealthy || ep.SendUnhealthyEndpoints {
				return true
			}
			continue
		}
		seen++
		if !prev.Equals(ep) {
			return true
		}
	}
	return seen != len(byKey)
}

// DeleteServiceShard removes the endpoints of one service from one shard;
// without preserveKeys the service is forgotten when no shard is left.
func (x *EndpointIndex) DeleteServiceShard(shard ShardKey, hostname, namespace string, preserveKeys bool) PushType {
	return x.deleteServiceShard(shard, hostname, namespace, preserveKeys)
}

func (x *EndpointIndex) deleteServiceShard(shard ShardKey, hostname, namespace string, preserveKeys bool) PushType {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, ok := x.services[hostname][namespace]
	if !ok {
		return NoPush
	}
	s.mu.Lock()
	_, had := s.shards[shard]
	delete(s.shards, shard)
	s.touchLocked()
	saChanged := s.recomputeServiceAccounts()
	empty := len(s.shards) == 0
	s.mu.Unlock()
	if empty && !preserveKeys {
		delete(x.services[hostname], namespace)
		if len(x.services[hostname]) == 0 {
			delete(x.services, hostname)
		}
	}
	switch {
	case saChanged:
		return FullPush
	case had:
		return IncrementalPush
	}
	return NoPush
}

// DeleteShard removes a shard from every service (a registry went away) and
// returns the services that lost endpoints.
func (x *EndpointIndex) DeleteShard(shard ShardKey) []NamespacedHostname {
	x.mu.RLock()
	var hit []NamespacedHostname
	for h, byNS := range x.services {
		for ns, s := range byNS {
			s.mu.RLock()
			_, ok := s.shards[shard]
			s.mu.RUnlock()
			if ok {
				hit = append(hit, NamespacedHostname{Hostname: h, Namespace: ns})
			}
		}
	}
	x.mu.RUnlock()
	for _, n := range hit {
		x.deleteServiceShard(shard, n.Hostname, n.Namespace, false)
	}
	return hit
}

// Snapshot copies the whole index (hostname → namespace → shards) for
// debugging; endpoint lists are shared and read-only.
func (x *EndpointIndex) Snapshot() map[string]map[string]ShardsView {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make(map[string]map[string]ShardsView, len(x.services))
	for h, byNS := range x.services {
		m := make(map[string]ShardsView, len(byNS))
		for ns, s := range byNS {
			m[ns] = s.View()
		}
		out[h] = m
	}
	return out
}
