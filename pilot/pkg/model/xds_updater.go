package model

import (
	"slices"
	"sync"
	"time"

	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// XDSUpdater is how the service registries tell the push engine what
// changed. Registries call it from their own goroutines; implementations are
// safe for concurrent use and never call back into a registry.
type XDSUpdater interface {
	// EDSUpdate replaces the endpoints of one service (hostname, namespace)
	// from one shard: eps is the complete list (empty: none left). The
	// receiver keeps eps; the caller must not modify the slice or its
	// endpoints afterwards.
	EDSUpdate(shard ShardKey, hostname, namespace string, eps []*IstioEndpoint)
	// SvcUpdate reports that a service was added, changed or deleted. The
	// push it needs is requested separately through ConfigUpdate.
	SvcUpdate(shard ShardKey, hostname, namespace string, event Event)
	// ConfigUpdate asks for a push. The request is the receiver's.
	ConfigUpdate(req *PushRequest)
	// ProxyUpdate reports that the workload behind the proxy with this IP
	// changed (labels, service account, the services it belongs to).
	ProxyUpdate(clusterID, ip string)
	// RemoveShard forgets every endpoint of a shard (a registry went away).
	RemoveShard(shard ShardKey)
}

// FanOut is an XDSUpdater that forwards every call to each of its
// updaters, in order.
type FanOut []XDSUpdater

var _ XDSUpdater = FanOut(nil)

// EDSUpdate implements XDSUpdater.
func (f FanOut) EDSUpdate(shard ShardKey, hostname, namespace string, eps []*IstioEndpoint) {
	for _, u := range f {
		u.EDSUpdate(shard, hostname, namespace, eps)
	}
}

// SvcUpdate implements XDSUpdater.
func (f FanOut) SvcUpdate(shard ShardKey, hostname, namespace string, event Event) {
	for _, u := range f {
		u.SvcUpdate(shard, hostname, namespace, event)
	}
}

// ConfigUpdate implements XDSUpdater.
func (f FanOut) ConfigUpdate(req *PushRequest) {
	for _, u := range f {
		u.ConfigUpdate(req)
	}
}

// ProxyUpdate implements XDSUpdater.
func (f FanOut) ProxyUpdate(clusterID, ip string) {
	for _, u := range f {
		u.ProxyUpdate(clusterID, ip)
	}
}

// RemoveShard implements XDSUpdater.
func (f FanOut) RemoveShard(shard ShardKey) {
	for _, u := range f {
		u.RemoveShard(shard)
	}
}

// ServiceConfigKey is the config key a change of a service travels under in
// push requests: kind ServiceEntry, whatever the registry (kind.Service never
// appears in ConfigsUpdated).
func ServiceConfigKey(hostname, namespace string) ConfigKey {
	return ConfigKey{Kind: kind.ServiceEntry, Name: hostname, Namespace: namespace}
}

// XDSEventType names a recorded XDSUpdater call.
type XDSEventType string

// Recorded call types.
const (
	XDSEventEDS         XDSEventType = "eds"
	XDSEventService     XDSEventType = "service"
	XDSEventConfig      XDSEventType = "config"
	XDSEventProxy       XDSEventType = "proxy"
	XDSEventRemoveShard XDSEventType = "removeShard"
)

// XDSEvent is one recorded call.
type XDSEvent struct {
	Seq       uint64
	Type      XDSEventType
	Shard     ShardKey
	Hostname  string
	Namespace string
	// Endpoints of an EDSUpdate (shared, read-only).
	Endpoints []*IstioEndpoint
	// Event of a SvcUpdate.
	Event Event
	// Push of a ConfigUpdate.
	Push *PushRequest
	// ClusterID and IP of a ProxyUpdate.
	ClusterID string
	IP        string
	Time      time.Time
}

// RecordingXDSUpdater records every call, keeping the last Limit events
// (all when Limit is 0). It stands in for the push engine in tests and in the
// server until the push engine exists.
type RecordingXDSUpdater struct {
	mu     sync.Mutex
	limit  int
	seq    uint64
	events []XDSEvent
	notify chan struct{}
}

var _ XDSUpdater = (*RecordingXDSUpdater)(nil)

// NewRecordingXDSUpdater keeps the last limit events (0: all).
func NewRecordingXDSUpdater(limit int) *RecordingXDSUpdater {
	return &RecordingXDSUpdater{limit: limit, notify: make(chan struct{})}
}

func (r *RecordingXDSUpdater) record(e XDSEvent) {
	r.mu.Lock()
	r.seq++
	e.Seq = r.seq
	e.Time = time.Now()
	r.events = append(r.events, e)
	if r.limit > 0 && len(r.events) > r.limit {
		r.events = slices.Delete(r.events, 0, len(r.events)-r.limit)
	}
	close(r.notify)
	r.notify = make(chan struct{})
	r.mu.Unlock()
}

// EDSUpdate implements XDSUpdater.
func (r *RecordingXDSUpdater) EDSUpdate(shard ShardKey, hostname, namespace string, eps []*IstioEndpoint) {
	r.record(XDSEvent{Type: XDSEventEDS, Shard: shard, Hostname: hostname, Namespace: namespace, Endpoints: eps})
}

// SvcUpdate implements XDSUpdater.
func (r *RecordingXDSUpdater) SvcUpdate(shard ShardKey, hostname, namespace string, event Event) {
	r.record(XDSEvent{Type: XDSEventService, Shard: shard, Hostname: hostname, Namespace: namespace, Event: event})
}

// ConfigUpdate implements XDSUpdater.
func (r *RecordingXDSUpdater) ConfigUpdate(req *PushRequest) {
	r.record(XDSEvent{Type: XDSEventConfig, Push: req})
}

// ProxyUpdate implements XDSUpdater.
func (r *RecordingXDSUpdater) ProxyUpdate(clusterID, ip string) {
	r.record(XDSEvent{Type: XDSEventProxy, ClusterID: clusterID, IP: ip})
}

// RemoveShard implements XDSUpdater.
func (r *RecordingXDSUpdater) RemoveShard(shard ShardKey) {
	r.record(XDSEvent{Type: XDSEventRemoveShard, Shard: shard})
}

// Events returns a copy of the recorded events, oldest first.
func (r *RecordingXDSUpdater) Events() []XDSEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Since returns the recorded events with a sequence number above seq.
func (r *RecordingXDSUpdater) Since(seq uint64) []XDSEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []XDSEvent
	for _, e := range r.events {
		if e.Seq > seq {
			out = append(out, e)
		}
	}
	return out
}

// Seq returns the sequence number of the last recorded event.
func (r *RecordingXDSUpdater) Seq() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}

// Reset drops the recorded events (sequence numbers keep growing).
func (r *RecordingXDSUpdater) Reset() {
	r.mu.Lock()
	r.events = nil
	r.mu.Unlock()
}

// WaitFor blocks until an event recorded after seq matches, and returns it;
// false when stop closes first. Pass the result of Seq() taken before the
// action under test.
func (r *RecordingXDSUpdater) WaitFor(stop <-chan struct{}, seq uint64, match func(XDSEvent) bool) (XDSEvent, bool) {
	for {
		r.mu.Lock()
		ch := r.notify
		for _, e := range r.events {
			if e.Seq > seq && match(e) {
				r.mu.Unlock()
				return e, true
			}
		}
		r.mu.Unlock()
		select {
		case <-stop:
			return XDSEvent{}, false
		case <-ch:
		}
	}
}
