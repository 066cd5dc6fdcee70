package xds

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"sort"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// DeltaAggregatedResources serves one delta ADS stream (the default of
// Istio 1.31 sidecars).
func (s *DiscoveryServer) DeltaAggregatedResources(stream discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return serveStream(s, stream.Context(), countRecvErrors(stream.Recv), true,
		func(con *Connection, req *discovery.DeltaDiscoveryRequest) error {
			return s.processDeltaRequest(con, stream, req)
		},
		func(con *Connection, req *model.PushRequest) error { return s.pushAllDelta(con, stream, req) })
}

// pushAllDelta pushes the types a request regenerates, in push order.
func (s *DiscoveryServer) pushAllDelta(con *Connection, stream deltaSender, req *model.PushRequest) error {
	if !s.throttle.Acquire(con.done) {
		return nil // the stream ended while waiting for a slot
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
		recordRejectDetail(t, con.Proxy().ID, req.ErrorDetail)
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
	w := &WatchedResource{TypeURL: t}
	w.Wildcard = isWildcardType(t) && len(req.ResourceNamesSubscribe) == 0
	names := make(map[string]struct{}, len(req.ResourceNamesSubscribe))
	for _, n := range req.ResourceNamesSubscribe {
		if n == "*" {
			w.Wildcard = true
			continue
		}
		names[intern(n)] = struct{}{}
	}
	w.setNames(names)
	// on reconnect the client says what it already holds
	held := make(map[string]string, len(req.InitialResourceVersions))
	for n, v := range req.InitialResourceVersions {
		held[intern(n)] = v
	}
	w.sent = sentFromMap(held)
	return w
}

// applySubscriptions updates the watch; it reports whether new names were
// subscribed (which needs a response).
func applySubscriptions(w *WatchedResource, req *discovery.DeltaDiscoveryRequest) bool {
	added := false
	// the subscription may be shared: a change makes a new one
	names, copied := w.ResourceNames, false
	change := func() {
		if !copied {
			names, copied = maps.Clone(names), true
			if names == nil {
				names = map[string]struct{}{}
			}
		}
	}
	for _, n := range req.ResourceNamesSubscribe {
		if n == "*" {
			added = added || !w.Wildcard
			w.Wildcard = true
			continue
		}
		if _, ok := names[n]; !ok {
			change()
			names[intern(n)] = struct{}{}
			added = true
		}
	}
	var forget []string
	for _, n := range req.ResourceNamesUnsubscribe {
		if n == "*" {
			w.Wildcard = false
			continue
		}
		if _, ok := names[n]; ok {
			change()
			delete(names, n)
		}
		if _, ok := w.sent.get(n); ok {
			forget = append(forget, n)
		}
	}
	if copied {
		w.setNames(names)
	}
	if len(forget) > 0 {
		w.sent = w.sent.without(forget)
	}
	return added
}

// pushDelta generates a type and sends what changed since the client's state:
// new or changed resources, and removals. A push that changes nothing is not
// sent unless it answers a request.
func (s *DiscoveryServer) pushDelta(con *Connection, stream deltaSender, t string, req *model.PushRequest, answer bool) error {
	wc := con.watch(t)
	if wc == nil {
		return nil
	}
	sent := wc.sent
	start := time.Now()
	proxy := con.Proxy() // one proxy for the whole generation
	gen := s.gens.find(proxy, t)
	if gen == nil {
		return nil
	}
	req = s.withPush(req)
	g, err := gen.Generate(proxy, wc, req)
	if err != nil {
		return generateError(con, t, err)
	}
	resp := &discovery.DeltaDiscoveryResponse{TypeUrl: t, SystemVersionInfo: req.Push.PushVersion(), ControlPlane: s.controlPlane}
	version := resourceVersions(g.Resources)
	size := 0
	for i, r := range g.Resources {
		v := version(i)
		if old, _ := sent.get(r.Name); old != v {
			if r.Version != v {
				// the version is ours: a copy carries it, the cached one
				// stays as its generator left it
				r = &discovery.Resource{Name: r.Name, Version: v, Resource: r.Resource}
			}
			// otherwise the response shares the generator's (cached,
			// read-only) resource, as every other connection's does
			resp.Resources = append(resp.Resources, r)
			size += len(r.GetResource().GetValue())
		}
	}
	// held resources are neither sent nor removed: the client keeps what
	// it holds
	held := heldSet(g.Held)
	var current *sentVersions
	if g.Partial && !isWildcardType(t) {
		// the rest is unchanged: the client keeps it, nothing is removed
		held = partialHeld(wc.Held, g)
		current = s.sent.afterPartial(con.sentScope(), t, g.Resources, version, sent)
	} else {
		current = s.sent.after(con.sentScope(), t, g.Resources, version, sent, held)
		resp.RemovedResources = removedNames(wc, sent, current, held)
	}
	if len(resp.Resources) == 0 && len(resp.RemovedResources) == 0 && !answer {
		s.recordUnsent(con, t, held, req.Push.Seq())
		return nil
	}
	resp.Nonce = nonce()
	if err := sendWithin(s.sendTimeout, con, t, func() error { return stream.Send(resp) }); err != nil {
		return err
	}
	con.mu.Lock()
	if w := con.watched[t]; w != nil {
		w.NonceSent = resp.Nonce
		w.VersionSent = req.Push.PushVersion()
		w.LastSent = time.Now()
		w.sent = current
		w.Held = held
		w.generatedFrom = req.Push.Seq()
	}
	con.mu.Unlock()
	recordSend(t, size, start)
	return nil
}

// removedNames: for a wildcard watch, what the client holds that no longer
// exists; for a named watch, the subscribed names the client holds or just
// asked for that do not exist. Held names exist: they are never removed.
func removedNames(w *WatchedResource, sent, current *sentVersions, held map[string]string) []string {
	var out []string
	if w.Wildcard {
		for n := range sent.all() {
			if _, ok := current.get(n); !ok {
				out = append(out, n)
			}
		}
	} else {
		for n := range w.ResourceNames {
			if _, ok := current.get(n); !ok {
				if _, h := held[n]; h {
					continue
				}
				if _, held := sent.get(n); held || w.NonceSent == "" {
					out = append(out, n)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// ContentVersion is a content hash of a serialised resource.
func ContentVersion(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}
