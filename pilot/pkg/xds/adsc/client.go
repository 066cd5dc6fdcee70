package adsc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	// resource types the client decodes
	_ "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// Config describes the simulated proxy.
type Config struct {
	// NodeID, e.g. sidecar~10.0.0.1~pod.ns~ns.svc.cluster.local.
	NodeID   string
	Metadata map[string]any
	// Cluster is the node's cluster (Istio's agent sends its service
	// cluster).
	Cluster string
	// Delta selects the delta protocol.
	Delta bool
	// NoAutoACK leaves ACKs to the caller.
	NoAutoACK bool
	// Unversioned accepts delta resources without a version (Istio's
	// istiod sends its workload API's authorizations so); the other wire
	// rules hold.
	Unversioned bool
	// DialOptions replace the default plaintext transport (TLS
	// credentials, per-RPC tokens).
	DialOptions []grpc.DialOption
}

// Response is one checked response.
type Response struct {
	TypeURL string
	Version string
	Nonce   string
	// Resources decoded, by name (for delta: only those in this response).
	Resources map[string]proto.Message
	Removed   []string
}

// Client is one ADS stream.
type Client struct {
	cfg  Config
	conn *grpc.ClientConn
	sotw discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	dlt  discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
	node *core.Node

	// recvd carries checked responses (or the stream's error) from the one
	// receive loop, started by the first Next.
	recvd    chan result
	recvOnce sync.Once

	mu      sync.Mutex
	nonces  map[string]bool
	names   map[string][]string // SotW subscriptions by type
	state   map[string]map[string]proto.Message
	first   bool
	version map[string]map[string]string // delta: name -> version held, by type
}

// Dial opens a stream to addr.
func Dial(ctx context.Context, addr string, cfg Config) (*Client, error) {
	opts := cfg.DialOptions
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, err
	}
	md, err := structpb.NewStruct(cfg.Metadata)
	if err != nil {
		return nil, fmt.Errorf("metadata: %v", err)
	}
	c := &Client{cfg: cfg, conn: conn, node: &core.Node{Id: cfg.NodeID, Cluster: cfg.Cluster, Metadata: md},
		nonces: map[string]bool{}, names: map[string][]string{}, state: map[string]map[string]proto.Message{},
		version: map[string]map[string]string{}, first: true}
	ads := discovery.NewAggregatedDiscoveryServiceClient(conn)
	if cfg.Delta {
		c.dlt, err = ads.DeltaAggregatedResources(ctx)
	} else {
		c.sotw, err = ads.StreamAggregatedResources(ctx)
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// Close ends the stream.
func (c *Client) Close() error { return c.conn.Close() }

func (c *Client) nodeOnce() *core.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first {
		c.first = false
		return c.node
	}
	return nil
}

// Watch subscribes to a type (names empty: wildcard).
func (c *Client) Watch(typeURL string, names ...string) error {
	if c.cfg.Delta {
		return c.dlt.Send(&discovery.DeltaDiscoveryRequest{Node: c.nodeOnce(), TypeUrl: typeURL, ResourceNamesSubscribe: names})
	}
	c.mu.Lock()
	c.names[typeURL] = names
	c.mu.Unlock()
	return c.sotw.Send(&discovery.DiscoveryRequest{Node: c.nodeOnce(), TypeUrl: typeURL, ResourceNames: names})
}

// Unwatch ends a delta subscription to names and forgets what is held of
// them, as Envoy does when the listener that named them goes (a
// state-of-the-world client replaces its names with Watch instead).
func (c *Client) Unwatch(typeURL string, names ...string) error {
	c.mu.Lock()
	for _, n := range names {
		delete(c.state[typeURL], n)
		delete(c.version[typeURL], n)
	}
	c.mu.Unlock()
	return c.dlt.Send(&discovery.DeltaDiscoveryRequest{Node: c.nodeOnce(), TypeUrl: typeURL, ResourceNamesUnsubscribe: names})
}

// Reconnect-style watch: a delta subscription that declares what is held.
func (c *Client) WatchWithInitialVersions(typeURL string, initial map[string]string, names ...string) error {
	return c.dlt.Send(&discovery.DeltaDiscoveryRequest{Node: c.nodeOnce(), TypeUrl: typeURL,
		ResourceNamesSubscribe: names, InitialResourceVersions: initial})
}

// SendSotW sends a raw SotW request (for protocol tests); its resource names
// become the subscription later ACKs repeat.
func (c *Client) SendSotW(req *discovery.DiscoveryRequest) error {
	if req.ResourceNames != nil {
		c.mu.Lock()
		c.names[req.TypeUrl] = req.ResourceNames
		c.mu.Unlock()
	}
	return c.sotw.Send(req)
}

// SendDelta sends a raw delta request.
func (c *Client) SendDelta(req *discovery.DeltaDiscoveryRequest) error { return c.dlt.Send(req) }

type result struct {
	r   *Response
	err error
}

// errNoResponse is what Next returns when nothing came in time.
var errNoResponse = errors.New("no response")

// receiveLoop checks and queues every response until the stream ends.
func (c *Client) receiveLoop() {
	for {
		r, err := c.recv()
		c.recvd <- result{r, err}
		if err != nil {
			return
		}
	}
}

// Next waits for the next response, checks it, and ACKs it unless NoAutoACK.
// A response that breaks a wire rule is returned as an error.
func (c *Client) Next(timeout time.Duration) (*Response, error) {
	c.recvOnce.Do(func() {
		c.recvd = make(chan result, 1024)
		go c.receiveLoop()
	})
	select {
	case res := <-c.recvd:
		if res.err != nil {
			return nil, res.err
		}
		if !c.cfg.NoAutoACK {
			if err := c.ACK(res.r); err != nil {
				return nil, err
			}
		}
		return res.r, nil
	case <-time.After(timeout):
		return nil, fmt.Errorf("%w within %v", errNoResponse, timeout)
	}
}

// ACK acknowledges a response.
func (c *Client) ACK(r *Response) error {
	if c.cfg.Delta {
		return c.dlt.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: r.TypeURL, ResponseNonce: r.Nonce})
	}
	c.mu.Lock()
	names := c.names[r.TypeURL]
	c.mu.Unlock()
	return c.sotw.Send(&discovery.DiscoveryRequest{TypeUrl: r.TypeURL, ResponseNonce: r.Nonce, VersionInfo: r.Version, ResourceNames: names})
}

// NACK rejects a response with a message.
func (c *Client) NACK(r *Response, msg string) error {
	detail := &statuspb.Status{Code: 3, Message: msg}
	if c.cfg.Delta {
		return c.dlt.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: r.TypeURL, ResponseNonce: r.Nonce, ErrorDetail: detail})
	}
	c.mu.Lock()
	names := c.names[r.TypeURL]
	c.mu.Unlock()
	return c.sotw.Send(&discovery.DiscoveryRequest{TypeUrl: r.TypeURL, ResponseNonce: r.Nonce, ResourceNames: names, ErrorDetail: detail})
}

// State returns the names the client holds of a type, sorted.
func (c *Client) State(typeURL string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.state[typeURL]))
	for n := range c.state[typeURL] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Resource returns a held resource.
func (c *Client) Resource(typeURL, name string) proto.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state[typeURL][name]
}

// Versions returns the delta versions held of a type (for reconnects).
func (c *Client) Versions(typeURL string) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for k, v := range c.version[typeURL] {
		out[k] = v
	}
	return out
}

func (c *Client) recv() (*Response, error) {
	if c.cfg.Delta {
		m, err := c.dlt.Recv()
		if err != nil {
			return nil, err
		}
		return c.checkDelta(m)
	}
	m, err := c.sotw.Recv()
	if err != nil {
		return nil, err
	}
	return c.checkSotW(m)
}

// decode unpacks a resource and applies the type and validation rules.
func decode(typeURL string, a *anypb.Any) (proto.Message, error) {
	if a.GetTypeUrl() != typeURL {
		return nil, fmt.Errorf("resource of type %q in a %q response", a.GetTypeUrl(), typeURL)
	}
	m, err := a.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("undecodable resource: %v", err)
	}
	if v, ok := m.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			return nil, fmt.Errorf("invalid resource: %v", err)
		}
	}
	return m, nil
}
