package bootstrap

import (
	"sync"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// syncGate is the XDSUpdater of a remote cluster's registry: it holds the
// registry's endpoint updates until the registry has synced, keeping the
// last of each service, then passes them on and every later one straight
// through. A registry that is still syncing writes endpoints partially
// (an EndpointSlice read before its pods is missing those endpoints);
// when the registry replaces one of the same cluster (rotated
// credentials), whose shard it shares, those partial lists would
// replace the complete ones the old registry serves. Istio, too, handles
// a cluster's endpoints only once its informers synced. Everything else
// goes through at once.
type syncGate struct {
	next model.XDSUpdater

	mu   sync.Mutex
	open bool
	held map[gateKey][]*model.IstioEndpoint
	// order is the order the held services were first written in
	order []gateKey
}

type gateKey struct {
	shard               model.ShardKey
	hostname, namespace string
}

func newSyncGate(next model.XDSUpdater) *syncGate {
	return &syncGate{next: next, held: map[gateKey][]*model.IstioEndpoint{}}
}

// openWhen opens the gate once synced reports true (polled), unless stop
// closes first: the registry's updates are then dropped with it.
func (g *syncGate) openWhen(synced func() bool, stop <-chan struct{}) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !synced() {
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
	g.openNow()
}

// openNow passes the held updates on, in the order they were first
// written, and opens the gate.
func (g *syncGate) openNow() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		return
	}
	// under the lock: an update arriving meanwhile waits, and so comes
	// after the held one of its service
	for _, k := range g.order {
		g.next.EDSUpdate(k.shard, k.hostname, k.namespace, g.held[k])
	}
	g.held, g.order, g.open = nil, nil, true
}

// isOpen tells the held updates went out.
func (g *syncGate) isOpen() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

// EDSUpdate implements model.XDSUpdater.
func (g *syncGate) EDSUpdate(shard model.ShardKey, hostname, namespace string, eps []*model.IstioEndpoint) {
	g.mu.Lock()
	if !g.open {
		k := gateKey{shard, hostname, namespace}
		if _, ok := g.held[k]; !ok {
			g.order = append(g.order, k)
		}
		g.held[k] = eps
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	g.next.EDSUpdate(shard, hostname, namespace, eps)
}

// SvcUpdate implements model.XDSUpdater.
func (g *syncGate) SvcUpdate(shard model.ShardKey, hostname, namespace string, event model.Event) {
	g.next.SvcUpdate(shard, hostname, namespace, event)
}

// ConfigUpdate implements model.XDSUpdater.
func (g *syncGate) ConfigUpdate(req *model.PushRequest) { g.next.ConfigUpdate(req) }

// ProxyUpdate implements model.XDSUpdater.
func (g *syncGate) ProxyUpdate(clusterID, ip string) { g.next.ProxyUpdate(clusterID, ip) }

// RemoveShard implements model.XDSUpdater.
func (g *syncGate) RemoveShard(shard model.ShardKey) { g.next.RemoveShard(shard) }
