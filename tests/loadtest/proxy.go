package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unique"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	// the router filter and TLS transport sockets inside listeners and clusters
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/meshplane/istiod/pilot/pkg/xds"
)

var hcmTypeURL = "type.googleapis.com/" + string(proto.MessageName(&hcm.HttpConnectionManager{}))

// The simulated sidecar is a streaming checker: it applies the wire rules of
// pilot/pkg/xds/adsc to every delta response (type URL, system version,
// unique nonce, named and versioned resources of the response's type,
// nothing both sent and removed, resource names matching their content) but
// keeps only resource names, not decoded resources, so that a thousand of
// them fit in a modest amount of memory; names are interned, all sidecars
// share one copy of each. Every sidecar decodes only what it acts on
// (listeners, and of a route configuration the target's virtual host) and
// walks the wire structure of clusters, endpoints and the rest of the
// routes. Validating sidecars also keep every resource they receive and,
// once the runner has taken a phase's figures, decode it in full and run
// ValidateAll on it (checkBacklog): the tool's heaviest work then never
// competes, on a small machine, with the control plane it is timing.

// wireError is a response that broke a protocol rule.
type wireError struct{ msg string }

func (e *wireError) Error() string { return "wire rule: " + e.msg }

func wireErrorf(format string, args ...any) error {
	return &wireError{fmt.Sprintf(format, args...)}
}

type eventKind int

const (
	evFull    eventKind = iota // every subscribed resource arrived
	evChanged                  // the changed route arrived
	evFailed                   // the stream failed or broke a rule
	evPartial                  // all subscribed resources arrived, but not the whole mesh
	evChurned                  // every churned Service's final endpoints arrived (churn.go)
)

type proxyEvent struct {
	id    int
	kind  eventKind
	at    time.Time
	err   error
	round int32 // of an evChanged
}

// counters are shared by all sidecars.
type counters struct {
	responses atomic.Int64
	resources [4]atomic.Int64
	bytes     [4]atomic.Int64
	// churnEmpty counts churned Services' load assignments sent empty
	churnEmpty atomic.Int64
}

var typeIndex = map[string]int{xds.ClusterType: 0, xds.EndpointType: 1, xds.ListenerType: 2, xds.RouteType: 3}

// Name states in a named (EDS, RDS) watch.
const (
	subscribed uint8 = 1 << iota
	answered         // received, or reported removed (does not exist)
)

// namedWatch is a non-wildcard subscription.
type namedWatch map[string]uint8

// complete reports whether every subscribed name was answered.
func (w namedWatch) complete() bool {
	for _, s := range w {
		if s&subscribed != 0 && s&answered == 0 {
			return false
		}
	}
	return true
}

func (w namedWatch) names() []string {
	out := make([]string, 0, len(w))
	for n := range w {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (w namedWatch) answer(name string) {
	if s, ok := w[name]; ok {
		w[name] = s | answered
	}
}

// sync makes the subscription the wanted set and returns the difference.
func (w namedWatch) sync(want map[string]struct{}) (sub, unsub []string) {
	for n := range want {
		if w[n]&subscribed == 0 {
			w[n] = subscribed
			sub = append(sub, n)
		}
	}
	for n := range w {
		if _, ok := want[n]; !ok {
			delete(w, n)
			unsub = append(unsub, n)
		}
	}
	return sub, unsub
}

// proxy is one simulated sidecar on its own connection.
type proxy struct {
	id       int
	nodeID   string
	meta     map[string]any
	validate bool
	// versioned requires a version on every delta resource, a rule of
	// this repository's istiod; the protocol makes it optional, Envoy
	// does without, and Istio's pilot-discovery sends none on some types
	versioned bool
	// window is the fixed flow-control window (Options.Window)
	window int32
	// opts are the run's; churning is set while the pods churn
	opts     *Options
	churning *atomic.Bool
	churn    churnState
	// the route that changes: virtual host and weighted cluster
	targetVHost, targetCluster string

	events chan<- proxyEvent
	count  *counters
	// round is the change round under way (0 before the first), set by
	// the runner before it edits the VirtualService
	round *atomic.Int32
	// work bounds the sidecars decoding at once, so that the transports'
	// goroutines (keepalive pings, flow control) are not queued behind a
	// thousand decoders
	work chan struct{}

	start time.Time // when its dial began (read by the runner after an event)

	// syncSlots, when set, bounds the sidecars between their first dial
	// and full config; syncing says this one holds a slot
	syncSlots chan struct{}
	syncing   bool

	stream    discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
	requested map[string]bool
	nonces    map[string]struct{}
	clusters  map[string]bool     // held clusters: is EDS
	listeners map[string][]string // held listeners: their RDS names
	eds, rds  namedWatch
	gotCDS    bool
	gotLDS    bool
	full      bool
	sawTarget bool
	partial   bool
	// changedRound is the last round whose routes arrived
	changedRound int32

	// backlog holds, on a validating sidecar, the resources received
	// since the last checkBacklog
	// (the last version of each: a resource replaced before the check is
	// not checked, so that a config storm's thousand versions of a route
	// configuration are not all kept)
	backlog   map[backlogKey]*discovery.Resource
	backlogMu sync.Mutex
}

func intern(s string) string { return unique.Make(s).Value() }

// backlogKey names a kept resource.
type backlogKey struct{ typeURL, name string }

// run connects (holding a dial slot while the connection and stream open),
// then serves the stream until ctx ends or a rule breaks.
func (p *proxy) run(ctx context.Context, addr string, dialSlots chan struct{}) {
	if p.syncSlots != nil {
		select {
		case p.syncSlots <- struct{}{}:
			p.syncing = true
		case <-ctx.Done():
			return
		}
		defer p.endSync()
	}
	err := p.serve(ctx, addr, dialSlots)
	if err != nil && ctx.Err() == nil {
		p.events <- proxyEvent{id: p.id, kind: evFailed, at: time.Now(), err: err}
	}
}

func (p *proxy) serve(ctx context.Context, addr string, dialSlots chan struct{}) error {
	md, err := structpb.NewStruct(p.meta)
	if err != nil {
		return err
	}
	node := &core.Node{Id: p.nodeID, Metadata: md}
	for attempt := 0; ; attempt++ {
		err := p.attempt(ctx, addr, node, dialSlots)
		// a server that is not serving yet refuses with Unavailable before
		// the first response; retry that a few times
		if status.Code(err) == codes.Unavailable && !p.gotCDS && attempt < 20 && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return err
	}
}

func (p *proxy) attempt(ctx context.Context, addr string, node *core.Node, dialSlots chan struct{}) error {
	select {
	case dialSlots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if p.start.IsZero() {
		p.start = time.Now()
	}
	// small transport buffers: a sidecar writes only small requests; a
	// fixed window (no bandwidth estimate) bounds what it buffers
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithReadBufferSize(16 << 10), grpc.WithWriteBufferSize(4 << 10),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30), grpc.ForceCodecV2(newResponseCodec()))}
	if p.window > 0 {
		opts = append(opts, grpc.WithInitialWindowSize(p.window), grpc.WithInitialConnWindowSize(p.window))
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		<-dialSlots
		return err
	}
	defer conn.Close()
	p.stream, err = discovery.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err == nil {
		p.reset()
		err = p.request(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: xds.ClusterType})
	}
	<-dialSlots
	if err != nil {
		return err
	}
	for {
		r, err := p.stream.Recv()
		if err != nil {
			return err
		}
		p.work <- struct{}{}
		err = p.handle(r)
		<-p.work
		if err != nil {
			return err
		}
	}
}

// endSync frees the sidecar's syncing slot, once: at full config, or when
// it ends without.
func (p *proxy) endSync() {
	if p.syncing {
		p.syncing = false
		<-p.syncSlots
	}
}

func (p *proxy) reset() {
	p.requested = map[string]bool{}
	p.nonces = map[string]struct{}{}
	p.clusters = map[string]bool{}
	p.listeners = map[string][]string{}
	p.eds, p.rds = namedWatch{}, namedWatch{}
	p.gotCDS, p.gotLDS = false, false
}

func (p *proxy) request(r *discovery.DeltaDiscoveryRequest) error {
	p.requested[r.TypeUrl] = true
	return p.stream.Send(r)
}

// handle checks one response, updates the held names, ACKs, and asks for
// what the new state implies: EDS for EDS clusters, LDS once clusters are
// warm, RDS for the listeners' route names.
func (p *proxy) handle(r *discovery.DeltaDiscoveryResponse) error {
	t := r.TypeUrl
	switch {
	case t == "":
		return wireErrorf("delta response without a type URL")
	case !p.requested[t]:
		return wireErrorf("%s response on a stream that never asked for it", t)
	case r.SystemVersionInfo == "":
		return wireErrorf("%s delta response without a system version", t)
	case r.Nonce == "":
		return wireErrorf("%s response without a nonce", t)
	}
	if _, dup := p.nonces[r.Nonce]; dup {
		return wireErrorf("nonce %q reused on the stream", r.Nonce)
	}
	p.nonces[r.Nonce] = struct{}{}
	ti, known := typeIndex[t]
	if !known {
		return wireErrorf("unexpected type %s", t)
	}
	p.count.responses.Add(1)
	p.count.resources[ti].Add(int64(len(r.Resources)))
	sent := make(map[string]struct{}, len(r.Resources))
	for _, res := range r.Resources {
		if res.Name == "" {
			return wireErrorf("%s delta resource without a name", t)
		}
		if res.Version == "" && p.versioned {
			return wireErrorf("%s delta resource %q without a version", t, res.Name)
		}
		if res.Resource.GetTypeUrl() != t {
			return wireErrorf("resource %q of type %q in a %s response", res.Name, res.Resource.GetTypeUrl(), t)
		}
		p.count.bytes[ti].Add(int64(len(res.Resource.GetValue())))
		if err := p.apply(t, res); err != nil {
			return err
		}
		sent[res.Name] = struct{}{}
	}
	for _, n := range r.RemovedResources {
		if _, both := sent[n]; both {
			return wireErrorf("%s resource %q both sent and removed", t, n)
		}
		p.remove(t, n)
	}
	if err := p.stream.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: t, ResponseNonce: r.Nonce}); err != nil {
		return err
	}
	if err := p.follow(t); err != nil {
		return err
	}
	p.progress()
	return nil
}

// decode unpacks into m and checks the name.
func decode(res *discovery.Resource, m proto.Message, name func() string) error {
	if err := proto.Unmarshal(res.Resource.GetValue(), m); err != nil {
		return wireErrorf("undecodable %s %q: %v", res.Resource.GetTypeUrl(), res.Name, err)
	}
	if n := name(); n != res.Name {
		return wireErrorf("resource named %q carries %q", res.Name, n)
	}
	return nil
}

// checkBacklog decodes in full every resource the sidecar kept since the
// last call and runs ValidateAll on it (and on a listener's HTTP connection
// managers); the first failure is returned.
func (p *proxy) checkBacklog() error {
	p.backlogMu.Lock()
	todo := p.backlog
	p.backlog = nil
	p.backlogMu.Unlock()
	// checked in a stable order, so the first failure is the same each run
	keys := make([]backlogKey, 0, len(todo))
	for k := range todo {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].typeURL != keys[j].typeURL {
			return keys[i].typeURL < keys[j].typeURL
		}
		return keys[i].name < keys[j].name
	})
	for _, k := range keys {
		res := todo[k]
		var m interface {
			proto.Message
			ValidateAll() error
		}
		var name func() string
		switch res.Resource.GetTypeUrl() {
		case xds.ClusterType:
			c := &clusterv3.Cluster{}
			m, name = c, c.GetName
		case xds.EndpointType:
			c := &endpointv3.ClusterLoadAssignment{}
			m, name = c, c.GetClusterName
		case xds.ListenerType:
			l := &listenerv3.Listener{}
			m, name = l, l.GetName
		case xds.RouteType:
			rc := &routev3.RouteConfiguration{}
			m, name = rc, rc.GetName
		default:
			continue
		}
		if err := decode(res, m, name); err != nil {
			return err
		}
		if err := m.ValidateAll(); err != nil {
			return wireErrorf("invalid %s %q: %v", res.Resource.GetTypeUrl(), res.Name, err)
		}
		if l, ok := m.(*listenerv3.Listener); ok {
			if err := eachHCM(l, func(h *hcm.HttpConnectionManager) error {
				if err := h.ValidateAll(); err != nil {
					return wireErrorf("listener %q: invalid HTTP connection manager: %v", l.GetName(), err)
				}
				return nil
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *proxy) apply(t string, res *discovery.Resource) error {
	name := intern(res.Name)
	switch t {
	case xds.ClusterType:
		typ, err := scan(res, clusterName, clusterType)
		if err != nil {
			return err
		}
		p.clusters[name] = typ == uint64(clusterv3.Cluster_EDS)
	case xds.EndpointType:
		if _, err := scan(res, claName, 0); err != nil {
			return err
		}
		if p.opts != nil && p.opts.ChurnPods > 0 && strings.Contains(name, churnCluster) {
			if err := p.observeChurn(name, res); err != nil {
				return err
			}
		}
		p.eds.answer(name)
	case xds.ListenerType:
		l := &listenerv3.Listener{}
		if err := decode(res, l, l.GetName); err != nil {
			return err
		}
		routes, err := routeNames(l)
		if err != nil {
			return err
		}
		p.listeners[name] = routes
	case xds.RouteType:
		// a route configuration holds a virtual host per service: decode
		// only the target's
		vh, err := scanVirtualHost(res, p.targetVHost)
		if err != nil {
			return err
		}
		p.rds.answer(name)
		if vh != nil {
			p.observe(&routev3.RouteConfiguration{VirtualHosts: []*routev3.VirtualHost{vh}})
		}
	}
	if p.validate {
		p.backlogMu.Lock()
		if p.backlog == nil {
			p.backlog = map[backlogKey]*discovery.Resource{}
		}
		p.backlog[backlogKey{t, name}] = res
		p.backlogMu.Unlock()
	}
	return nil
}

// Field numbers the scans read.
var (
	clusterName = fieldNumber(&clusterv3.Cluster{}, "name")
	clusterType = fieldNumber(&clusterv3.Cluster{}, "type")
	claName     = fieldNumber(&endpointv3.ClusterLoadAssignment{}, "cluster_name")
	routeName   = fieldNumber(&routev3.RouteConfiguration{}, "name")
	routeVHosts = fieldNumber(&routev3.RouteConfiguration{}, "virtual_hosts")
	vhostName   = fieldNumber(&routev3.VirtualHost{}, "name")
)

// scanVirtualHost walks a serialized route configuration's top-level
// fields as scan does (the name must be the resource's) and decodes only
// the virtual host named want; nil when there is none.
func scanVirtualHost(res *discovery.Resource, want string) (*routev3.VirtualHost, error) {
	bad := func(err error) error {
		return wireErrorf("undecodable %s %q: %v", res.Resource.GetTypeUrl(), res.Name, err)
	}
	b := res.Resource.GetValue()
	var found *routev3.VirtualHost
	named := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, bad(protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType || (num != routeName && num != routeVHosts) {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil, bad(protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return nil, bad(protowire.ParseError(m))
		}
		b = b[m:]
		if num == routeName {
			if string(v) != res.Name {
				return nil, wireErrorf("resource named %q carries %q", res.Name, v)
			}
			named = true
			continue
		}
		if found == nil && bytesFieldIs(v, vhostName, want) {
			found = &routev3.VirtualHost{}
			if err := proto.Unmarshal(v, found); err != nil {
				return nil, bad(err)
			}
		}
	}
	if !named {
		return nil, wireErrorf("resource named %q carries no name", res.Name)
	}
	return found, nil
}

// bytesFieldIs reports whether message b has field num equal to want
// (malformed input reports false; the caller's decode finds it).
func bytesFieldIs(b []byte, num protowire.Number, want string) bool {
	for len(b) > 0 {
		f, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if f == num && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			return m >= 0 && string(v) == want
		}
		if n = protowire.ConsumeFieldValue(f, typ, b); n < 0 {
			return false
		}
		b = b[n:]
	}
	return false
}

func fieldNumber(m proto.Message, name protoreflect.Name) protowire.Number {
	return m.ProtoReflect().Descriptor().Fields().ByName(name).Number()
}

// scan walks a serialized resource's top-level fields without decoding it:
// the structure must parse, the name field must be the resource's name; it
// returns the varint field enumField (0: none).
func scan(res *discovery.Resource, nameField, enumField protowire.Number) (uint64, error) {
	b := res.Resource.GetValue()
	var enum uint64
	named := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, wireErrorf("undecodable %s %q: %v", res.Resource.GetTypeUrl(), res.Name, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == nameField && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m >= 0 && string(v) != res.Name {
				return 0, wireErrorf("resource named %q carries %q", res.Name, v)
			}
			named, n = true, m
		case num == enumField && typ == protowire.VarintType:
			enum, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return 0, wireErrorf("undecodable %s %q: %v", res.Resource.GetTypeUrl(), res.Name, protowire.ParseError(n))
		}
		b = b[n:]
	}
	if !named {
		return 0, wireErrorf("resource named %q carries no name", res.Name)
	}
	return enum, nil
}

func (p *proxy) remove(t, name string) {
	switch t {
	case xds.ClusterType:
		delete(p.clusters, name)
	case xds.EndpointType:
		p.eds.answer(name)
	case xds.ListenerType:
		delete(p.listeners, name)
	case xds.RouteType:
		p.rds.answer(name)
	}
}

// routeNames are the RDS names of a listener's HTTP connection managers.
func routeNames(l *listenerv3.Listener) ([]string, error) {
	var out []string
	err := eachHCM(l, func(h *hcm.HttpConnectionManager) error {
		if n := h.GetRds().GetRouteConfigName(); n != "" {
			out = append(out, intern(n))
		}
		return nil
	})
	return out, err
}

// eachHCM decodes the HTTP connection managers of a listener's filter
// chains (the default chain last) and calls fn on each.
func eachHCM(l *listenerv3.Listener, fn func(*hcm.HttpConnectionManager) error) error {
	chains := l.GetFilterChains()
	if dc := l.GetDefaultFilterChain(); dc != nil {
		chains = append(chains[:len(chains):len(chains)], dc)
	}
	for _, fc := range chains {
		for _, f := range fc.GetFilters() {
			if f.GetTypedConfig().GetTypeUrl() != hcmTypeURL {
				continue
			}
			h := &hcm.HttpConnectionManager{}
			if err := proto.Unmarshal(f.GetTypedConfig().GetValue(), h); err != nil {
				return wireErrorf("listener %q: undecodable HTTP connection manager: %v", l.GetName(), err)
			}
			if err := fn(h); err != nil {
				return err
			}
		}
	}
	return nil
}

// observe looks for the target's weighted route: any weight marks that the
// sidecar sees it, the weight of the current change round that the change
// arrived.
func (p *proxy) observe(rc *routev3.RouteConfiguration) {
	for _, vh := range rc.GetVirtualHosts() {
		if vh.GetName() != p.targetVHost {
			continue
		}
		for _, r := range vh.GetRoutes() {
			for _, wc := range r.GetRoute().GetWeightedClusters().GetClusters() {
				if wc.GetName() != p.targetCluster {
					continue
				}
				p.sawTarget = true
				round := p.round.Load()
				if round == 0 || !p.full || p.changedRound >= round {
					continue
				}
				if _, v2 := changedWeights(int(round)); wc.GetWeight().GetValue() == uint32(v2) {
					p.changedRound = round
					p.events <- proxyEvent{id: p.id, kind: evChanged, at: time.Now(), round: round}
				}
			}
		}
	}
}

// follow sends the subscriptions a response implies, in Envoy's order.
func (p *proxy) follow(t string) error {
	switch t {
	case xds.ClusterType:
		p.gotCDS = true
		want := map[string]struct{}{}
		for n, isEDS := range p.clusters {
			if isEDS {
				want[n] = struct{}{}
			}
		}
		sub, unsub := p.eds.sync(want)
		if len(sub) > 0 || len(unsub) > 0 {
			if err := p.request(&discovery.DeltaDiscoveryRequest{TypeUrl: xds.EndpointType,
				ResourceNamesSubscribe: sub, ResourceNamesUnsubscribe: unsub}); err != nil {
				return err
			}
		}
	case xds.ListenerType:
		p.gotLDS = true
		want := map[string]struct{}{}
		for _, routes := range p.listeners {
			for _, n := range routes {
				want[n] = struct{}{}
			}
		}
		sub, unsub := p.rds.sync(want)
		if len(sub) > 0 || len(unsub) > 0 {
			if err := p.request(&discovery.DeltaDiscoveryRequest{TypeUrl: xds.RouteType,
				ResourceNamesSubscribe: sub, ResourceNamesUnsubscribe: unsub}); err != nil {
				return err
			}
		}
	}
	// listeners once the clusters are warm (their endpoints arrived)
	if p.gotCDS && !p.requested[xds.ListenerType] && p.eds.complete() {
		return p.request(&discovery.DeltaDiscoveryRequest{TypeUrl: xds.ListenerType})
	}
	return nil
}

// progress reports full config the first time everything subscribed is
// held and the target's route is among it. A sidecar that held everything
// it subscribed to without the target route was served an incomplete mesh
// (reported once, as evPartial); it keeps waiting for the rest.
func (p *proxy) progress() {
	if p.full || !p.gotCDS || !p.gotLDS || !p.eds.complete() || !p.rds.complete() {
		return
	}
	if !p.sawTarget {
		if !p.partial {
			p.partial = true
			p.events <- proxyEvent{id: p.id, kind: evPartial, at: time.Now(),
				err: fmt.Errorf("first complete config had %d clusters, %d listeners and routes %v, without the route of %s",
					len(p.clusters), len(p.listeners), p.rds.names(), p.targetVHost)}
		}
		return
	}
	p.full = true
	p.endSync()
	p.events <- proxyEvent{id: p.id, kind: evFull, at: time.Now()}
}
