package xds

import (
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// ConnectionSnapshot is a copy of one connection's state, for debug views:
// the caller owns it, and the stream goes on without it. Proxy is shared
// and read-only.
type ConnectionSnapshot struct {
	ID          string
	PeerAddr    string
	ConnectedAt time.Time
	Delta       bool
	Proxy       *model.Proxy
	// Watches are deep copies of the watches, in push order.
	Watches []*WatchedResource
}

// Snapshot copies the connection's state.
func (c *Connection) Snapshot() ConnectionSnapshot {
	out := ConnectionSnapshot{ID: c.ID, PeerAddr: c.peerAddr, ConnectedAt: c.connectedAt, Delta: c.delta, Proxy: c.Proxy()}
	for _, t := range c.watchedTypes() {
		if w := c.Watched(t); w != nil {
			out.Watches = append(out.Watches, w)
		}
	}
	return out
}

// ConnectionSnapshots copies the state of every connection, sorted by
// connection ID.
func (s *DiscoveryServer) ConnectionSnapshots() []ConnectionSnapshot {
	cs := s.Connections()
	out := make([]ConnectionSnapshot, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Snapshot())
	}
	return out
}

// GenerateFor runs, for the first connection of the proxy with this ID
// (<pod>.<namespace>), the generator of a type with the connection's
// current watch (all resources of a wildcard type when it watches none)
// and the current snapshot: what the proxy would be sent now. connected is
// false when no such proxy is connected. The resources are shared with the
// generators' caches: read-only.
func (s *DiscoveryServer) GenerateFor(proxyID, typeURL string) (g Generated, connected bool, err error) {
	var con *Connection
	for _, c := range s.Connections() {
		if c.Proxy().ID == proxyID {
			con = c
			break
		}
	}
	if con == nil {
		return Generated{}, false, nil
	}
	w := con.Watched(typeURL)
	if w == nil {
		w = &WatchedResource{TypeURL: typeURL, Wildcard: isWildcardType(typeURL)}
	}
	proxy := con.Proxy() // one proxy for the whole generation
	gen := s.gens.find(proxy, typeURL)
	pc := s.push.Load()
	if gen == nil || pc == nil {
		return Generated{}, true, nil
	}
	g, err = gen.Generate(proxy, w, &model.PushRequest{Full: true, Push: pc})
	return g, true, err
}
