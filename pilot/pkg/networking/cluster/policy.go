package cluster

import (
	"math"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// MergeTrafficPolicy returns the policy that applies to one subset and
// port, as Istio 1.31 merges them: the rule's settings for the port replace
// the rule's policy wholesale (a field the port settings leave out takes
// its default, it is not inherited); then the subset's settings for the
// port replace those wholesale in turn, or, without any, the fields the
// subset's own policy sets replace them one by one. Inputs are not
// modified; the result has no port-level settings.
func MergeTrafficPolicy(root, subset *networking.TrafficPolicy, port int) *networking.TrafficPolicy {
	original, _ := portPolicy(root, port)
	if subset == nil {
		return shallowPolicy(original)
	}
	sp, wholesale := portPolicy(subset, port)
	if original == nil {
		return shallowPolicy(sp)
	}
	out := shallowPolicy(original)
	if sp.ConnectionPool != nil || wholesale {
		out.ConnectionPool = sp.ConnectionPool
	}
	if sp.OutlierDetection != nil || wholesale {
		out.OutlierDetection = sp.OutlierDetection
	}
	if sp.LoadBalancer != nil || wholesale {
		out.LoadBalancer = sp.LoadBalancer
	}
	if sp.Tls != nil || wholesale {
		out.Tls = sp.Tls
	}
	if sp.Tunnel != nil {
		out.Tunnel = sp.Tunnel
	}
	if sp.ProxyProtocol != nil {
		out.ProxyProtocol = sp.ProxyProtocol
	}
	if sp.RetryBudget != nil {
		out.RetryBudget = sp.RetryBudget
	}
	return out
}

// portPolicy is the policy's settings for the port (as a policy of their
// four fields) and true, or the policy itself and false when it has none.
func portPolicy(p *networking.TrafficPolicy, port int) (*networking.TrafficPolicy, bool) {
	if p == nil {
		return nil, false
	}
	for _, pl := range p.PortLevelSettings {
		if pl.GetPort() != nil && pl.GetPort().GetNumber() == uint32(port) {
			return &networking.TrafficPolicy{ConnectionPool: pl.ConnectionPool, LoadBalancer: pl.LoadBalancer,
				OutlierDetection: pl.OutlierDetection, Tls: pl.Tls}, true
		}
	}
	return p, false
}

// shallowPolicy copies a policy without its port-level settings (an empty
// policy for nil).
func shallowPolicy(p *networking.TrafficPolicy) *networking.TrafficPolicy {
	if p == nil {
		return &networking.TrafficPolicy{}
	}
	return &networking.TrafficPolicy{ConnectionPool: p.ConnectionPool, LoadBalancer: p.LoadBalancer,
		OutlierDetection: p.OutlierDetection, Tls: p.Tls, Tunnel: p.Tunnel, ProxyProtocol: p.ProxyProtocol, RetryBudget: p.RetryBudget}
}

// overlay replaces the policy's settings with those that are set.
func overlay(out *networking.TrafficPolicy, lb *networking.LoadBalancerSettings, cp *networking.ConnectionPoolSettings,
	od *networking.OutlierDetection, tls *networking.ClientTLSSettings,
) {
	if lb != nil {
		out.LoadBalancer = lb
	}
	if cp != nil {
		out.ConnectionPool = cp
	}
	if od != nil {
		out.OutlierDetection = od
	}
	if tls != nil {
		out.Tls = tls
	}
}

// applyLoadBalancer sets the load-balancing policy (default LEAST_REQUEST).
func applyLoadBalancer(c *clusterv3.Cluster, lb *networking.LoadBalancerSettings) {
	c.LbPolicy = clusterv3.Cluster_LEAST_REQUEST
	if lb == nil {
		return
	}
	switch x := lb.LbPolicy.(type) {
	case *networking.LoadBalancerSettings_Simple:
		switch x.Simple {
		case networking.LoadBalancerSettings_ROUND_ROBIN:
			c.LbPolicy = clusterv3.Cluster_ROUND_ROBIN
		case networking.LoadBalancerSettings_RANDOM:
			c.LbPolicy = clusterv3.Cluster_RANDOM
		case networking.LoadBalancerSettings_PASSTHROUGH:
			c.LbPolicy = clusterv3.Cluster_CLUSTER_PROVIDED
			c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_ORIGINAL_DST}
			c.EdsClusterConfig = nil
		}
	case *networking.LoadBalancerSettings_ConsistentHash:
		ch := x.ConsistentHash
		if ch.GetMaglev() != nil {
			c.LbPolicy = clusterv3.Cluster_MAGLEV
			if size := ch.GetMaglev().GetTableSize(); size > 0 {
				c.LbConfig = &clusterv3.Cluster_MaglevLbConfig_{MaglevLbConfig: &clusterv3.Cluster_MaglevLbConfig{TableSize: wrapperspb.UInt64(size)}}
			}
			return
		}
		c.LbPolicy = clusterv3.Cluster_RING_HASH
		minRing := ch.GetRingHash().GetMinimumRingSize()
		if minRing == 0 {
			minRing = ch.GetMinimumRingSize() //nolint:staticcheck // deprecated field still honoured
		}
		if minRing == 0 {
			minRing = 1024
		}
		c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{MinimumRingSize: wrapperspb.UInt64(minRing)}}
	}
}

func u32(v uint32) *wrapperspb.UInt32Value { return wrapperspb.UInt32(v) }

// httpOptions are a cluster's upstream HTTP protocol options as Istio
// assembles them over several steps: absent until a step sets something,
// then emitted by finish.
type httpOptions struct{ o *httpv3.HttpProtocolOptions }

func (h *httpOptions) get() *httpv3.HttpProtocolOptions {
	if h.o == nil {
		h.o = &httpv3.HttpProtocolOptions{}
	}
	return h.o
}

// setH2 makes the cluster speak HTTP/2, unless a protocol is already chosen.
func (h *httpOptions) setH2() {
	if o := h.get(); o.UpstreamProtocolOptions == nil {
		o.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &core.Http2ProtocolOptions{}}}}
	}
}

// useDownstream makes the cluster speak the downstream's HTTP version,
// keeping explicit HTTP/1 options.
func (h *httpOptions) useDownstream() {
	o := h.get()
	h1 := &core.Http1ProtocolOptions{}
	if e := o.GetExplicitHttpConfig().GetHttpProtocolOptions(); e != nil {
		h1 = e
	}
	o.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_UseDownstreamProtocolConfig{UseDownstreamProtocolConfig: &httpv3.HttpProtocolOptions_UseDownstreamHttpConfig{
		HttpProtocolOptions: h1, Http2ProtocolOptions: &core.Http2ProtocolOptions{}}}
}

// finish puts the options on the cluster (HTTP/1 when no step chose a
// protocol, which Envoy requires).
func (h *httpOptions) finish(c *clusterv3.Cluster) {
	if h.o == nil {
		return
	}
	if h.o.UpstreamProtocolOptions == nil {
		h.o.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &core.Http1ProtocolOptions{}}}}
	}
	c.TypedExtensionProtocolOptions = map[string]*anypb.Any{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": protoconv.MessageToAny(h.o)}
}

// shouldH2Upgrade tells whether an outbound cluster is upgraded to HTTP/2:
// the connection pool's h2UpgradePolicy (never with useClientProtocol),
// else the mesh's, for HTTP ports only, as Istio decides.
func shouldH2Upgrade(p protocol.Instance, m *meshconfig.MeshConfig, cp *networking.ConnectionPoolSettings) bool {
	if h := cp.GetHttp(); h != nil {
		if h.UseClientProtocol {
			return false
		}
		switch h.H2UpgradePolicy {
		case networking.ConnectionPoolSettings_HTTPSettings_UPGRADE:
			return true
		case networking.ConnectionPoolSettings_HTTPSettings_DO_NOT_UPGRADE:
			return false
		}
	}
	return p.IsHTTP() && m.GetH2UpgradePolicy() == meshconfig.MeshConfig_UPGRADE
}

// applyConnectionPool sets circuit breakers (with the retry budget),
// timeouts, TCP keepalive (the mesh's, then the rule's) and the HTTP
// options the pool implies; unset limits are unlimited, as in Istio. HTTP/2
// settings apply only when h already speaks HTTP/2 (by its port or the
// upgrade).
func applyConnectionPool(c *clusterv3.Cluster, cp *networking.ConnectionPoolSettings, budget *networking.TrafficPolicy_RetryBudget, m *meshconfig.MeshConfig, h *httpOptions) {
	th := &clusterv3.CircuitBreakers_Thresholds{
		MaxConnections:     u32(math.MaxUint32),
		MaxPendingRequests: u32(math.MaxUint32),
		MaxRequests:        u32(math.MaxUint32),
		MaxRetries:         u32(math.MaxUint32),
	}
	if budget != nil {
		// budgetInterval is not rendered: go-control-plane v1.36 has no
		// field for it (Istio's newer Envoy API has)
		rb := &clusterv3.CircuitBreakers_Thresholds_RetryBudget{BudgetPercent: &typev3.Percent{Value: 20}, MinRetryConcurrency: u32(3)}
		if budget.Percent != nil {
			rb.BudgetPercent = &typev3.Percent{Value: budget.Percent.Value}
		}
		if budget.MinRetryConcurrency > 0 {
			rb.MinRetryConcurrency = u32(budget.MinRetryConcurrency)
		}
		th.RetryBudget = rb
	}
	c.ConnectTimeout = meshConnectTimeout(m)
	var idle, maxDuration *durationpb.Duration
	var perConn, streams uint32
	var h2ka *networking.ConnectionPoolSettings_HTTPSettings_ConnectionKeepalive
	if hs := cp.GetHttp(); hs != nil {
		if hs.Http2MaxRequests > 0 {
			th.MaxRequests = u32(uint32(hs.Http2MaxRequests))
		}
		if hs.Http1MaxPendingRequests > 0 {
			th.MaxPendingRequests = u32(uint32(hs.Http1MaxPendingRequests))
		}
		if hs.MaxRetries > 0 {
			th.MaxRetries = u32(uint32(hs.MaxRetries))
		}
		idle, perConn, streams, h2ka = hs.IdleTimeout, uint32(hs.MaxRequestsPerConnection), uint32(hs.MaxConcurrentStreams), hs.GetHttp2KeepAlive()
	}
	if tcp := cp.GetTcp(); tcp != nil {
		if tcp.ConnectTimeout != nil {
			c.ConnectTimeout = tcp.ConnectTimeout
		}
		if tcp.MaxConnections > 0 {
			th.MaxConnections = u32(uint32(tcp.MaxConnections))
		}
		maxDuration = tcp.MaxConnectionDuration
		if idle == nil {
			idle = tcp.IdleTimeout
		}
	}
	setKeepalive(c, m.GetTcpKeepalive())
	setKeepalive(c, cp.GetTcp().GetTcpKeepalive())
	c.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{th}}
	if maxDuration != nil || idle != nil || perConn > 0 || streams > 0 || h2ka != nil {
		o := h.get()
		if o.CommonHttpProtocolOptions == nil {
			o.CommonHttpProtocolOptions = &core.HttpProtocolOptions{}
		}
		if idle != nil {
			o.CommonHttpProtocolOptions.IdleTimeout = idle
		}
		if perConn > 0 {
			o.CommonHttpProtocolOptions.MaxRequestsPerConnection = u32(perConn)
		}
		if maxDuration != nil {
			o.CommonHttpProtocolOptions.MaxConnectionDuration = maxDuration
		}
		if h2 := o.GetExplicitHttpConfig().GetHttp2ProtocolOptions(); h2 != nil {
			if streams > 0 {
				h2.MaxConcurrentStreams = u32(streams)
			}
			if h2ka != nil {
				h2.ConnectionKeepalive = &core.KeepaliveSettings{Interval: h2ka.Interval, Timeout: h2ka.Timeout}
			}
		}
	}
	if cp.GetHttp().GetUseClientProtocol() {
		h.useDownstream()
	}
}

// setKeepalive sets (or overrides field by field) the upstream TCP
// keepalive; an empty setting turns SO_KEEPALIVE on with the OS defaults.
func setKeepalive(c *clusterv3.Cluster, ka *networking.ConnectionPoolSettings_TCPSettings_TcpKeepalive) {
	if ka == nil {
		return
	}
	if c.UpstreamConnectionOptions == nil {
		c.UpstreamConnectionOptions = &clusterv3.UpstreamConnectionOptions{TcpKeepalive: &core.TcpKeepalive{}}
	}
	k := c.UpstreamConnectionOptions.TcpKeepalive
	if ka.Probes > 0 {
		k.KeepaliveProbes = u32(ka.Probes)
	}
	if ka.Time != nil {
		k.KeepaliveTime = u32(uint32(ka.Time.AsDuration().Seconds()))
	}
	if ka.Interval != nil {
		k.KeepaliveInterval = u32(uint32(ka.Interval.AsDuration().Seconds()))
	}
}

// applyTrafficProtocol runs Istio's sequence for a cluster of a port: the
// port's own protocol first (when the cluster is built: HTTP/2 ports speak
// HTTP/2; a sidecar's clusters of ports without a declared protocol speak
// the downstream's), then, with the traffic policy, the HTTP/2 upgrade
// (outbound only; it keeps a protocol already chosen) and the connection
// pool, and sets the result.
func applyTrafficProtocol(c *clusterv3.Cluster, pol *networking.TrafficPolicy, p protocol.Instance, m *meshconfig.MeshConfig, outbound, sidecar bool) {
	var h httpOptions
	if p.IsHTTP2() {
		h.setH2()
	} else if sidecar && p == protocol.Unsupported {
		h.useDownstream()
	}
	cp := pol.GetConnectionPool()
	if outbound && shouldH2Upgrade(p, m, cp) {
		h.setH2()
	}
	applyConnectionPool(c, cp, pol.GetRetryBudget(), m, &h)
	h.finish(c)
}

// applyOutlierDetection translates outlier detection; an error count that is
// set is enforced at 100%, one that is not is not enforced.
func applyOutlierDetection(c *clusterv3.Cluster, od *networking.OutlierDetection) {
	if od == nil {
		return
	}
	out := &clusterv3.OutlierDetection{
		EnforcingConsecutive_5Xx: u32(0),
		EnforcingSuccessRate:     u32(0),
	}
	if v := od.GetConsecutive_5XxErrors(); v != nil {
		out.Consecutive_5Xx = u32(v.Value)
		if v.Value > 0 {
			out.EnforcingConsecutive_5Xx = u32(100)
		}
	} else if od.ConsecutiveErrors > 0 { //nolint:staticcheck // deprecated field still honoured
		out.Consecutive_5Xx = u32(uint32(od.ConsecutiveErrors))
		out.EnforcingConsecutive_5Xx = u32(100)
	}
	if v := od.GetConsecutiveGatewayErrors(); v != nil {
		out.ConsecutiveGatewayFailure = u32(v.Value)
		if v.Value > 0 {
			out.EnforcingConsecutiveGatewayFailure = u32(100)
		}
	}
	out.Interval = od.Interval
	out.BaseEjectionTime = od.BaseEjectionTime
	if od.MaxEjectionPercent > 0 {
		out.MaxEjectionPercent = u32(uint32(od.MaxEjectionPercent))
	}
	if od.SplitExternalLocalOriginErrors {
		out.SplitExternalLocalOriginErrors = true
		if od.ConsecutiveLocalOriginFailures != nil {
			out.ConsecutiveLocalOriginFailure = u32(od.ConsecutiveLocalOriginFailures.Value)
		}
	}
	c.OutlierDetection = out
	if c.CommonLbConfig == nil {
		c.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{}
	}
	c.CommonLbConfig.HealthyPanicThreshold = &typev3.Percent{Value: float64(od.MinHealthPercent)}
}

// withMeshDefaults overlays the mesh's defaultTrafficPolicy on a resolved
// policy, block by block: a policy (after its port and subset merges) that
// sets no connectionPool or outlierDetection takes the mesh's. The policy
// is copied, never changed in place.
func withMeshDefaults(m *meshconfig.MeshConfig, pol *networking.TrafficPolicy) *networking.TrafficPolicy {
	d := m.GetDefaultTrafficPolicy()
	pool := d.GetConnectionPool() != nil && pol.GetConnectionPool() == nil
	outlier := d.GetOutlierDetection() != nil && pol.GetOutlierDetection() == nil
	if !pool && !outlier {
		return pol
	}
	out := &networking.TrafficPolicy{}
	if pol != nil {
		out = &networking.TrafficPolicy{LoadBalancer: pol.LoadBalancer, ConnectionPool: pol.ConnectionPool, OutlierDetection: pol.OutlierDetection,
			Tls: pol.Tls, PortLevelSettings: pol.PortLevelSettings, Tunnel: pol.Tunnel, ProxyProtocol: pol.ProxyProtocol, RetryBudget: pol.RetryBudget}
	}
	if pool {
		out.ConnectionPool = d.GetConnectionPool()
	}
	if outlier {
		out.OutlierDetection = d.GetOutlierDetection()
	}
	return out
}

// meshPoolSettings tells whether the mesh sets anything Istio applies to
// clusters without a DestinationRule through their connection pool.
func meshPoolSettings(m *meshconfig.MeshConfig) bool {
	return m.GetDefaultTrafficPolicy().GetConnectionPool() != nil || m.GetTcpKeepalive() != nil
}

// redisMaglev makes a Redis port's cluster balance by MAGLEV when the
// Redis proxy shards on the client side (PILOT_ENABLE_REDIS_FILTER),
// whatever the rule's load balancer says, as Istio does, and tells whether
// it did.
func redisMaglev(c *clusterv3.Cluster, port *model.Port, on bool) bool {
	if !on || port.Protocol != protocol.Redis {
		return false
	}
	c.LbPolicy = clusterv3.Cluster_MAGLEV
	return true
}
