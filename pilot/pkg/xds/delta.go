package xds

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// DeltaAggregatedResources serves one delta ADS stream (the default of
// Istio 1.31 sidecars).
func (s *DiscoveryServer) DeltaAggregatedResources(stream discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return serveStream(s, stream.Context(), stream.Recv, true,
		func(con *Connection, req *discovery.DeltaDiscoveryRequest) error {
			return s.processDeltaRequest(con, stream, req)
		},
		func(con *Connection, req *model.PushRequest) error { return s.pushAllDelta(con, stream, req) })
}

// pushAllDelta pushes the types a request regenerates, in push order.
func (s *DiscoveryServer) pushAllDelta(con *Connection, stream deltaSender, req *model.PushRequest) error {
	if !s.throttle.Acquire(nil) {
		return nil
	}
	defer s.throttle.Release()
	for _, t := range pushTypes(con, req) {
		if err := s.pushDelta(con, stream, t, req, false); err != nil {
			return err
		}
	}
	recordConvergence(req)
	return nil
}

type deltaSender interface {
	Send(*discovery.DeltaDiscoveryResponse) error
}

// processDeltaRequest applies the wire rules to one delta request.
func (s *DiscoveryServer) processDeltaRequest(con *Connection, stream deltaSender, req *discovery.DeltaDiscoveryRequest) error {
	t := req.TypeUrl
	short := ShortType(t)
	subChange := len(req.ResourceNamesSubscribe) > 0 || len(req.ResourceNamesUnsubscribe) > 0
	if req.ErrorDetail != nil {
		con.recordNACK(t, req.ResponseNonce, req.ErrorDetail.GetMessage())
		return nil
	}
	con.mu.Lock()
	w := con.watched[t]
	if w == nil {
		w = newDeltaWatch(t, req)
		con.watched[t] = w
		con.mu.Unlock()
		return s.pushDelta(con, stream, t, &model.PushRequest{Full: true, Reason: model.NewReasonStats(model.ProxyRequest)}, true)
	}
	if req.ResponseNonce != "" && req.ResponseNonce != w.NonceSent && !subChange {
		con.mu.Unlock()
		expiredNonce.WithLabelValues(short).Inc()
		return nil
	}
	if req.ResponseNonce == w.NonceSent {
		w.NonceAcked = req.ResponseNonce
		w.LastNACK = ""
	}
	newNames := applySubscriptions(w, req)
	con.mu.Unlock()
	if !newNames {
		return nil
	}
	return s.pushDelta(con, stream, t, &model.PushRequest{Full: true, Reason: model.NewReasonStats(model.ProxyRequest)}, true)
}

func newDeltaWatch(t string, req *discovery.DeltaDiscoveryRequest) *WatchedResource {
	w := &WatchedResource{TypeURL: t, ResourceNames: map[string]struct{}{}, Sent: map[string]string{}}
	w.Wildcard = isWildcardType(t) && len(req.ResourceNamesSubscribe) == 0
	for _, n := range req.ResourceNamesSubscribe {
		if n == "*" {
			w.Wildcard = true
			continue
		}
		w.ResourceNames[n] = struct{}{}
	}
	// on reconnect the client says what it already holds
	for n, v := range req.InitialResourceVersions {
		w.Sent[n] = v
	}
	return w
}

// applySubscriptions updates the watch; it reports whether new names were
// subscribed (which needs a response).
func applySubscriptions(w *WatchedResource, req *discovery.DeltaDiscoveryRequest) bool {
	added := false
	for _, n := range req.ResourceNamesSubscribe {
		if n == "*" {
			added = added || !w.Wildcard
			w.Wildcard = true
			continue
		}
		if _, ok := w.ResourceNames[n]; !ok {
			w.ResourceNames[n] = struct{}{}
			added = true
		}
	}
	for _, n := range req.ResourceNamesUnsubscribe {
		if n == "*" {
			w.Wildcard = false
			continue
		}
		delete(w.ResourceNames, n)
		delete(w.Sent, n)
	}
	return added
}

// pushDelta generates a type and sends what changed since the client's state:
// new or changed resources, and removals. A push that changes nothing is not
// sent unless it answers a request.
func (s *DiscoveryServer) pushDelta(con *Connection, stream deltaSender, t string, req *model.PushRequest, answer bool) error {
	wc := con.Watched(t)
	if wc == nil {
		return nil
	}
	sent := wc.Sent
	start := time.Now()
	gen := s.gens.find(con.proxy, t)
	if gen == nil {
		return nil
	}
	req = s.withPush(req)
	g, err := gen.Generate(con.proxy, wc, req)
	if err != nil {
		return generateError(con, t, err)
	}
	resp := &discovery.DeltaDiscoveryResponse{TypeUrl: t, SystemVersionInfo: req.Push.PushVersion(), ControlPlane: s.controlPlane}
	current := make(map[string]string, len(g.Resources))
	size := 0
	for _, r := range g.Resources {
		v := resourceVersion(r)
		current[r.Name] = v
		if sent[r.Name] != v {
			resp.Resources = append(resp.Resources, &discovery.Resource{Name: r.Name, Version: v, Resource: r.Resource})
			size += len(r.GetResource().GetValue())
		}
	}
	held := heldSet(g.Held)
	for n := range held {
		// neither sent nor removed: the client keeps what it holds
		if v, ok := sent[n]; ok {
			current[n] = v
		}
	}
	resp.RemovedResources = removedNames(wc, sent, current, held)
	if len(resp.Resources) == 0 && len(resp.RemovedResources) == 0 && !answer {
		s.setHeld(con, t, held)
		return nil
	}
	resp.Nonce = nonce()
	if err := stream.Send(resp); err != nil {
		RecordXDSSendError(ShortType(t))
		return err
	}
	con.mu.Lock()
	if w := con.watched[t]; w != nil {
		w.NonceSent = resp.Nonce
		w.VersionSent = req.Push.PushVersion()
		w.LastSent = time.Now()
		w.Sent = current
		w.Held = held
	}
	con.mu.Unlock()
	recordSend(t, size, start)
	return nil
}

// removedNames: for a wildcard watch, what the client holds that no longer
// exists; for a named watch, the subscribed names the client holds or just
// asked for that do not exist. Held names exist: they are never removed.
func removedNames(w *WatchedResource, sent, current map[string]string, held map[string]string) []string {
	var out []string
	if w.Wildcard {
		for n := range sent {
			if _, ok := current[n]; !ok {
				out = append(out, n)
			}
		}
	} else {
		for n := range w.ResourceNames {
			if _, ok := current[n]; !ok {
				if _, h := held[n]; h {
					continue
				}
				if _, held := sent[n]; held || w.NonceSent == "" {
					out = append(out, n)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// resourceVersion is the version of a resource: the one its generator set,
// else a content hash.
func resourceVersion(r *discovery.Resource) string {
	if r.Version != "" {
		return r.Version
	}
	return ContentVersion(r.GetResource().GetValue())
}

// ContentVersion is a content hash of a serialised resource.
func ContentVersion(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}
