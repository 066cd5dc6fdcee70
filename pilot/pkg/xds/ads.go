package xds

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/log"
)

var adsLog = log.RegisterScope("ads", "xDS server")

// DiscoveryServer serves ADS, state of the world and delta, to sidecars,
// gateways and proxyless gRPC clients.
type DiscoveryServer struct {
	gens generators

	// push is the current snapshot; nil until the first one exists, and
	// streams are refused with Unavailable until then.
	push atomic.Pointer[model.PushContext]

	mu          sync.RWMutex
	connections map[string]*Connection
	connCounter atomic.Int64

	// throttle bounds the connections pushing at once (PILOT_PUSH_THROTTLE).
	throttle *Semaphore

	// auth authenticates streams over TLS (nil: none is).
	auth AuthenticateFunc
	// limit bounds new streams per second (nil: unlimited).
	limit *rate.Limiter
	// controlPlane identifies this istiod in every response.
	controlPlane *core.ControlPlane
	// sendTimeout bounds each send to a client (0: none).
	sendTimeout time.Duration

	// sent are the bases the delta connections' sets of sent versions
	// share, by scope (see sentVersions).
	sent sentBases
	// refusals dedupe the log lines of refused streams, by peer.
	refusals refusalLog
	// enc holds the encodings of the resources the generators made for
	// this server's responses (see NewResource).
	enc *Encodings
	// labeler gives proxies their workload's labels (nil: the metadata's).
	labeler model.WorkloadLabeler
	// clusterAliases map a proxy's CLUSTER_ID to the cluster it is in
	// (--clusterAliases).
	clusterAliases map[string]string
	// observer follows the streams (nil: none; see ConnectionObserver).
	observer ConnectionObserver
	// ambient serves ztunnel (PILOT_ENABLE_AMBIENT); without it a ztunnel
	// is refused as Istio refuses it.
	ambient bool
}

// SetAmbient serves ztunnel the workload API (PILOT_ENABLE_AMBIENT). Call
// before serving.
func (s *DiscoveryServer) SetAmbient(enabled bool) { s.ambient = enabled }

// SetClusterAliases maps cluster IDs: a proxy whose CLUSTER_ID is a key of
// aliases is taken to run in the cluster it maps to, as with Istio's
// --clusterAliases. Call before serving.
func (s *DiscoveryServer) SetClusterAliases(aliases map[string]string) { s.clusterAliases = aliases }

// SetControlPlane sets the identifier every response carries (Istio's JSON
// of component, pod name and build info). Call before serving.
func (s *DiscoveryServer) SetControlPlane(identifier string) {
	s.controlPlane = &core.ControlPlane{Identifier: identifier}
}

// generateError ends the stream when a generator refuses the request with
// a gRPC status (the debug types without authentication), and otherwise
// logs the failure and sends nothing.
func generateError(con *Connection, t string, err error) error {
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		adsLog.Warnf("%s: %s refused: %v", con.ID, ShortType(t), err)
		return err
	}
	adsLog.Warnf("%s: generating %s: %v", con.ID, ShortType(t), err)
	return nil
}

// NewDiscoveryServer returns a server with no generators and no snapshot.
func NewDiscoveryServer() *DiscoveryServer {
	return &DiscoveryServer{
		connections: map[string]*Connection{},
		throttle:    NewSemaphore(PushThrottle(0)),
		sendTimeout: DefaultSendTimeout,
		enc:         &Encodings{},
	}
}

// SetPushThrottle bounds the connections pushing at once (0: automatic).
// Call before serving.
func (s *DiscoveryServer) SetPushThrottle(n int) { s.throttle = NewSemaphore(PushThrottle(n)) }

// pushTypes lists the watched types a request regenerates for a connection.
func pushTypes(con *Connection, req *model.PushRequest) []string {
	var out []string
	for _, t := range con.watchedTypes() {
		if model.TypeNeedsPushSince(con.Proxy(), req, t, con.generatedFrom(t)) {
			out = append(out, t)
		}
	}
	return out
}

// RegisterGenerator registers the default generator of a type.
func (s *DiscoveryServer) RegisterGenerator(typeURL string, g Generator) {
	s.gens.register("", typeURL, g)
}

// RegisterGeneratorFor registers the generator of a type for proxies whose
// metadata GENERATOR is name (e.g. "grpc").
func (s *DiscoveryServer) RegisterGeneratorFor(name, typeURL string, g Generator) {
	s.gens.register(name, typeURL, g)
}

// RegisterGeneratorForNodeType registers the generator of a type for
// proxies of a node type (e.g. waypoints), unless their GENERATOR names
// one of its own.
func (s *DiscoveryServer) RegisterGeneratorForNodeType(t model.NodeType, typeURL string, g Generator) {
	s.gens.register(nodeTypeKey(t), typeURL, g)
}

// SetPushContext installs a snapshot; responses carry its PushVersion.
func (s *DiscoveryServer) SetPushContext(pc *model.PushContext) { s.push.Store(pc) }

// PushContext is the current snapshot (nil before the first one).
// Read-only.
func (s *DiscoveryServer) PushContext() *model.PushContext { return s.push.Load() }

// Ready reports whether the first snapshot exists, so that streams are
// served.
func (s *DiscoveryServer) Ready() bool { return s.push.Load() != nil }

// Register mounts the ADS services on a gRPC server.
func (s *DiscoveryServer) Register(g *grpc.Server) {
	discovery.RegisterAggregatedDiscoveryServiceServer(g, s)
}

// Push sends req to every connected proxy it concerns (all of them for now;
// per-proxy scoping comes with the push engine).
func (s *DiscoveryServer) Push(req *model.PushRequest) {
	for _, c := range s.Connections() {
		c.enqueue(req)
	}
}

// Connections returns the connected proxies, sorted by connection ID.
func (s *DiscoveryServer) Connections() []*Connection {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*Connection, 0, len(s.connections))
	for _, c := range s.connections {
		out = append(out, c)
	}
	sortConnections(out)
	return out
}

func (s *DiscoveryServer) addConnection(c *Connection) {
	s.mu.Lock()
	s.connections[c.ID] = c
	s.mu.Unlock()
	s.sent.join(c.sentScope())
	xdsClients.WithLabelValues(c.Proxy().Metadata.IstioVersion).Inc()
}

func (s *DiscoveryServer) removeConnection(c *Connection) {
	s.mu.Lock()
	_, known := s.connections[c.ID]
	delete(s.connections, c.ID)
	s.mu.Unlock()
	if !known {
		adsLog.Errorf("removing connection %s, which is not registered", c.ID)
		totalXDSInternalErrors.WithLabelValues().Inc()
		return
	}
	s.sent.leave(c.sentScope())
	xdsClients.WithLabelValues(c.Proxy().Metadata.IstioVersion).Dec()
}

// initConnection validates the first request's node and builds the connection.
func (s *DiscoveryServer) initConnection(ctx context.Context, node *core.Node, delta bool, ids []string) (*Connection, error) {
	if s.push.Load() == nil {
		return nil, status.Error(codes.Unavailable, "server is not ready to serve discovery information")
	}
	if node == nil || node.Id == "" {
		return nil, status.Error(codes.InvalidArgument, "missing node information in the first request")
	}
	proxy, err := model.ParseServiceNodeWithMetadata(node.Id, node.Metadata)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if real, ok := s.clusterAliases[proxy.ClusterID()]; ok && proxy.Metadata != nil {
		proxy.Metadata.ClusterID = real
	}
	if proxy.Type == model.Ztunnel && !s.ambient {
		// Istio's words; a plain error, as Istio's (gRPC code Unknown)
		return nil, errors.New("ztunnel requires PILOT_ENABLE_AMBIENT=true")
	}
	proxy.ServiceCluster = node.Cluster
	nodeLocality := ""
	if l := node.Locality; l != nil && (l.Region != "" || l.Zone != "" || l.SubZone != "") {
		nodeLocality = l.Region + "/" + l.Zone + "/" + l.SubZone
	}
	proxy = s.withWorkload(proxy, nodeLocality)
	if ids != nil {
		if err := authorize(proxy, ids); err != nil {
			return nil, err
		}
	}
	peerAddr := "0.0.0.0"
	if p, ok := peer.FromContext(ctx); ok {
		peerAddr = p.Addr.String()
	}
	c := &Connection{
		ID:           node.Id + "-" + strconv.FormatInt(s.connCounter.Add(1), 10),
		nodeLocality: nodeLocality,
		peerAddr:     peerAddr,
		connectedAt:  time.Now(),
		delta:        delta,
		done:         ctx.Done(),
		watched:      map[string]*WatchedResource{},
		pushCh:       make(chan *model.PushRequest, 1),
	}
	c.proxy.Store(proxy)
	return c, nil
}

// SetWorkloadLabeler makes proxies take their workload's labels from the
// registry, on connect and on every update of the workload (nil: from
// their metadata). Call before serving.
func (s *DiscoveryServer) SetWorkloadLabeler(l model.WorkloadLabeler) { s.labeler = l }

// withWorkload is the proxy with its workload's labels and locality, as the
// registry has them now.
func (s *DiscoveryServer) withWorkload(p *model.Proxy, nodeLocality string) *model.Proxy {
	var labels map[string]string
	if s.labeler != nil {
		labels = s.labeler.GetProxyWorkloadLabels(p)
	}
	return p.WithWorkloadLabels(labels, nodeLocality)
}

// StreamAggregatedResources serves one state-of-the-world ADS stream.
func (s *DiscoveryServer) StreamAggregatedResources(stream discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return serveStream(s, stream.Context(), countRecvErrors(stream.Recv), false,
		func(con *Connection, req *discovery.DiscoveryRequest) error {
			return s.processRequest(con, stream, req)
		},
		func(con *Connection, req *model.PushRequest) error { return s.pushAll(con, stream, req) })
}

// processRequest applies the wire rules to one request: NACK, stale nonce,
// ACK (with or without a subscription change), or a first request.
func (s *DiscoveryServer) processRequest(con *Connection, stream sotwSender, req *discovery.DiscoveryRequest) error {
	t := req.TypeUrl
	short := ShortType(t)
	if req.ErrorDetail != nil {
		con.recordNACK(t, req.ResponseNonce, req.ErrorDetail.GetMessage())
		recordRejectDetail(t, con.Proxy().ID, req.ErrorDetail)
		return nil
	}
	con.mu.Lock()
	w := con.watched[t]
	if req.ResponseNonce != "" && w != nil && req.ResponseNonce != w.NonceSent {
		con.mu.Unlock()
		expiredNonce.WithLabelValues(short).Inc()
		adsLog.Debugf("%s sent a stale nonce for %s: %s (current %s)", con.ID, short, req.ResponseNonce, w.NonceSent)
		return nil
	}
	names := toSet(req.ResourceNames)
	if req.ResponseNonce != "" && w != nil {
		// ACK
		w.NonceAcked = req.ResponseNonce
		w.LastNACK = ""
		changed := !sameSet(names, w.ResourceNames)
		if changed {
			w.setNames(names)
			w.Wildcard = isWildcardType(t) && len(names) == 0
		}
		con.mu.Unlock()
		if !changed {
			return nil
		}
		return s.pushType(con, stream, t, &model.PushRequest{Full: true, Reason: model.NewReasonStats(model.ProxyRequest)})
	}
	// first request for the type on this stream (a reconnect carries a
	// version but no nonce: treat it the same)
	w = &WatchedResource{TypeURL: t, Wildcard: isWildcardType(t) && len(names) == 0}
	w.setNames(names)
	con.watched[t] = w
	con.mu.Unlock()
	return s.pushType(con, stream, t, &model.PushRequest{Full: true, Reason: model.NewReasonStats(model.ProxyRequest)})
}

// sotwSender is the send half of a state-of-the-world stream.
type sotwSender interface {
	Send(*discovery.DiscoveryResponse) error
}

// pushAll pushes every watched type in push order.
func (s *DiscoveryServer) pushAll(con *Connection, stream sotwSender, req *model.PushRequest) error {
	if !s.throttle.Acquire(con.done) {
		return nil // the stream ended while waiting for a slot
	}
	defer s.throttle.Release()
	for _, t := range pushTypes(con, req) {
		if err := s.pushType(con, stream, t, req); err != nil {
			return err
		}
	}
	recordConvergence(req)
	return nil
}

// recordConvergence observes the time from the first change merged into req
// to the end of its push to one proxy.
func recordConvergence(req *model.PushRequest) {
	if !req.Start.IsZero() {
		RecordProxyConvergence(time.Since(req.Start))
	}
}

// pushType generates one type for the connection and sends it.
func (s *DiscoveryServer) pushType(con *Connection, stream sotwSender, t string, req *model.PushRequest) error {
	wc := con.watch(t)
	if wc == nil {
		return nil
	}
	start := time.Now()
	proxy := con.Proxy() // one proxy for the whole generation
	gen := s.gens.find(proxy, t)
	if gen == nil {
		adsLog.Debugf("%s: no generator for %s", con.ID, t)
		return nil
	}
	req = s.withPush(req)
	g, err := gen.Generate(proxy, wc, req)
	if err != nil {
		return generateError(con, t, err)
	}
	res, held := g.Resources, heldSet(g.Held)
	if isWildcardType(t) && len(held) > 0 {
		// leaving a listener or cluster out of a state-of-the-world
		// response deletes it: resend the copy the proxy holds
		res = withHeldCopies(res, wc.last, held)
	}
	partial := g.Partial && !isWildcardType(t)
	if partial {
		// what was not regenerated stays as it was, held or not
		held = partialHeld(wc.Held, g)
		if len(res) == 0 {
			// nothing the proxy watches changed: an empty response would
			// only cost it an ACK (Istio sends one)
			s.recordUnsent(con, t, held, req.Push.Seq())
			return nil
		}
	}
	resp := &discovery.DiscoveryResponse{TypeUrl: t, VersionInfo: req.Push.PushVersion(), Nonce: nonce(), ControlPlane: s.controlPlane}
	size := 0
	for _, r := range res {
		resp.Resources = append(resp.Resources, r.Resource)
		size += len(r.GetResource().GetValue())
	}
	if err := sendWithin(s.sendTimeout, con, t, func() error { return stream.Send(resp) }); err != nil {
		return err
	}
	con.mu.Lock()
	if w := con.watched[t]; w != nil {
		w.NonceSent = resp.Nonce
		w.VersionSent = resp.VersionInfo
		w.LastSent = time.Now()
		w.Held = held
		w.generatedFrom = req.Push.Seq()
		if isWildcardType(t) {
			w.last = res
		}
	}
	con.mu.Unlock()
	recordSend(t, size, start)
	return nil
}

// withPush gives req the snapshot it is generated from: its own, or the
// current one when it has none or an older one (a newer snapshot holds
// every change the older one did). Responses carry the version of the
// snapshot their content comes from.
func (s *DiscoveryServer) withPush(req *model.PushRequest) *model.PushRequest {
	cur := s.push.Load()
	if req.Push != nil && (cur == nil || req.Push.Seq() >= cur.Seq()) {
		return req
	}
	cp := *req
	cp.Push = cur
	return &cp
}

func nonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func toSet(names []string) map[string]struct{} {
	out := make(map[string]struct{}, len(names))
	for _, n := range names {
		out[intern(n)] = struct{}{}
	}
	return out
}

func sameSet(a, b map[string]struct{}) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}
