package xds

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// Connection is one ADS stream from one proxy.
type Connection struct {
	// ID is the node ID plus a per-server counter.
	ID string
	// proxy is immutable: a change of the workload swaps in a new one
	// (see DiscoveryServer.ProxyUpdate)
	proxy atomic.Pointer[model.Proxy]
	// nodeLocality is the locality the node sent, the proxy's when the
	// registry gives none
	nodeLocality string
	peerAddr     string
	connectedAt  time.Time
	delta        bool
	// done is closed when the stream ends: nothing the stream's goroutine
	// waits for (a push slot, a send) outlives it
	done <-chan struct{}

	mu      sync.Mutex
	watched map[string]*WatchedResource
	pending *model.PushRequest
	// queuedAt is when pending was first set (for pilot_proxy_queue_time).
	queuedAt time.Time

	// pushCh signals that pending holds a request (capacity 1).
	pushCh chan *model.PushRequest
}

// sentScope is the group whose clients likely hold the same resources as
// this one (see sentBases).
func (c *Connection) sentScope() sentScope {
	p := c.Proxy()
	return sentScope{proxyType: string(p.Type), namespace: p.ConfigNamespace}
}

// Proxy returns the connected proxy.
func (c *Connection) Proxy() *model.Proxy { return c.proxy.Load() }

// enqueue merges req into the pending push and wakes the stream's loop. A
// request arriving while a push is in flight waits, merged, for the next
// round: a proxy is never pushed twice at once and never misses a change.
func (c *Connection) enqueue(req *model.PushRequest) {
	c.mu.Lock()
	if c.pending == nil {
		c.queuedAt = time.Now()
	}
	c.pending = c.pending.Merge(req)
	p := c.pending
	c.mu.Unlock()
	select {
	case c.pushCh <- p:
	default:
		// a signal is already waiting; the loop takes the merged pending request
	}
}

// pushChan yields merged pending requests; nil (blocking) before the
// connection exists.
func (c *Connection) pushChan() <-chan *model.PushRequest {
	if c == nil {
		return nil
	}
	return c.pushCh
}

// takePending removes and returns the pending request. The signal may carry
// a request older than the merged pending one, which wins.
func (c *Connection) takePending(signal *model.PushRequest) *model.PushRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending
	c.pending = nil
	if p == nil {
		return signal
	}
	recordQueueTime(time.Since(c.queuedAt))
	return p
}

// watchedTypes lists the watched types in push order, then the others sorted.
func (c *Connection) watchedTypes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, t := range pushOrder {
		if _, ok := c.watched[t]; ok {
			out = append(out, t)
			seen[t] = true
		}
	}
	var rest []string
	for t := range c.watched {
		if !seen[t] {
			rest = append(rest, t)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// Watched returns a deep copy of the connection's watch of a type (nil if
// none): the caller owns it, and the stream goes on changing its own.
func (c *Connection) Watched(typeURL string) *WatchedResource {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.watched[typeURL]
	if !ok {
		return nil
	}
	return w.clone()
}

// watch returns the connection's own watch of a type (nil if none), not a
// copy. Only the stream's goroutine may call it: that goroutine is the only
// one that changes a watch (always under mu), so it reads its own without
// the lock or a copy, while other goroutines copy under mu (Watched).
// Copying every map of a watch on every push cost as much as the watch.
func (c *Connection) watch(typeURL string) *WatchedResource {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watched[typeURL]
}

// generatedFrom is the Seq of the snapshot the type was last generated
// from for this connection (0: never, or not watched).
func (c *Connection) generatedFrom(typeURL string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.watched[typeURL]; w != nil {
		return w.generatedFrom
	}
	return 0
}

func sortConnections(cs []*Connection) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].ID < cs[j].ID })
}

// recordNACK keeps a rejection of the last response of a type for syncz and
// counts it; nothing is resent (the same input would give the same output).
func (c *Connection) recordNACK(typeURL, nonce, msg string) {
	c.mu.Lock()
	if w := c.watched[typeURL]; w != nil && nonce == w.NonceSent {
		w.LastNACK = msg
	}
	c.mu.Unlock()
	short := ShortType(typeURL)
	totalXDSRejects.WithLabelValues(short).Inc()
	adsLog.Warnf("%s rejected %s (nonce %s): %s", c.ID, short, nonce, msg)
}
