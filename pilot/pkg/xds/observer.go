package xds

import (
	"strings"

	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// HealthInfoType is the type URL of the health reports Istio's agent sends
// on its ADS stream (the result of its readiness probe: a request with an
// ErrorDetail is a failing probe). They are not subscriptions: the server
// takes them before the wire rules and never answers them.
const HealthInfoType = "type.googleapis.com/istio.v1.HealthInformation"

// ConnectionObserver follows the server's streams from outside it (the
// WorkloadEntry auto-registration controller). The server calls its
// methods from the stream's own goroutine, so a slow observer slows that
// stream only; they must not block on the stream itself.
//
// For every stream whose OnConnect returned nil, OnDisconnect is called
// exactly once, when the stream ends; a stream OnConnect refuses gets no
// other call. The ProxyStream values are built for each call and are the
// observer's to keep; their Proxy is read-only.
type ConnectionObserver interface {
	// OnConnect is called once the first request has been authenticated
	// and authorized, before the stream is registered or answered. An
	// error refuses the stream: the server ends it with that error (a gRPC
	// status error keeps its code; any other error is codes.Unknown).
	OnConnect(s model.ProxyStream) error
	// OnDisconnect is called when an accepted stream ends.
	OnDisconnect(s model.ProxyStream)
	// OnHealth is called for each health report of an accepted stream:
	// healthy, or not with the agent's message.
	OnHealth(s model.ProxyStream, healthy bool, message string)
}

// SetConnectionObserver makes o follow every stream (nil: none). Call
// before serving.
func (s *DiscoveryServer) SetConnectionObserver(o ConnectionObserver) { s.observer = o }

// streamOf describes a connection to the observer.
func streamOf(c *Connection) model.ProxyStream {
	return model.ProxyStream{ID: c.ID, Proxy: c.Proxy(), ConnectedAt: c.connectedAt, NodeLocality: istioLocality(c.nodeLocality)}
}

// istioLocality writes the node's "region/zone/subzone" as Istio's
// LocalityToString does: cut at the first empty part after the region.
func istioLocality(l string) string {
	if l == "" {
		return ""
	}
	parts := strings.SplitN(l, "/", 3)
	out := parts[0]
	for _, p := range parts[1:] {
		if p == "" {
			break
		}
		out += "/" + p
	}
	return out
}

// observeConnect asks the observer whether the new connection may go on.
func (s *DiscoveryServer) observeConnect(c *Connection) error {
	if s.observer == nil {
		return nil
	}
	return s.observer.OnConnect(streamOf(c))
}

// observeDisconnect tells the observer an accepted connection ended.
func (s *DiscoveryServer) observeDisconnect(c *Connection) {
	if s.observer != nil {
		s.observer.OnDisconnect(streamOf(c))
	}
}

// takeHealth reports whether a request is a health report, which the
// stream takes instead of handling it; a report before the stream's first
// request (which carries the node) is dropped, as Istio drops it.
func (s *DiscoveryServer) takeHealth(c *Connection, typeURL string, detail *rpcstatus.Status) bool {
	if typeURL != HealthInfoType {
		return false
	}
	if c == nil {
		adsLog.Warnf("dropped a health report sent before the stream's first request")
		return true
	}
	if s.observer != nil {
		s.observer.OnHealth(streamOf(c), detail == nil, detail.GetMessage())
	}
	return true
}
