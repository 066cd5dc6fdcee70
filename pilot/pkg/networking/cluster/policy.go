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
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/networking/protoconv"
	"github.com/meshplane/istiod/pkg/config/protocol"
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

// applyConnectionPool sets circuit breakers, timeouts and HTTP protocol
// options; unset limits are unlimited, as in Istio.
func applyConnectionPool(c *clusterv3.Cluster, cp *networking.ConnectionPoolSettings, proto protocol.Instance, defaultTimeout *durationpb.Duration) {
	th := &clusterv3.CircuitBreakers_Thresholds{
		MaxConnections:     u32(math.MaxUint32),
		MaxPendingRequests: u32(math.MaxUint32),
		MaxRequests:        u32(math.MaxUint32),
		MaxRetries:         u32(math.MaxUint32),
	}
	c.ConnectTimeout = defaultTimeout
	var httpOpts *core.HttpProtocolOptions
	if tcp := cp.GetTcp(); tcp != nil {
		if tcp.MaxConnections > 0 {
			th.MaxConnections = u32(uint32(tcp.MaxConnections))
		}
		if tcp.ConnectTimeout != nil {
			c.ConnectTimeout = tcp.ConnectTimeout
		}
		if ka := tcp.TcpKeepalive; ka != nil {
			k := &core.TcpKeepalive{}
			if ka.Probes > 0 {
				k.KeepaliveProbes = u32(ka.Probes)
			}
			if ka.Time != nil {
				k.KeepaliveTime = u32(uint32(ka.Time.AsDuration().Seconds()))
			}
			if ka.Interval != nil {
				k.KeepaliveInterval = u32(uint32(ka.Interval.AsDuration().Seconds()))
			}
			c.UpstreamConnectionOptions = &clusterv3.UpstreamConnectionOptions{TcpKeepalive: k}
		}
	}
	if h := cp.GetHttp(); h != nil {
		if h.Http1MaxPendingRequests > 0 {
			th.MaxPendingRequests = u32(uint32(h.Http1MaxPendingRequests))
		}
		if h.Http2MaxRequests > 0 {
			th.MaxRequests = u32(uint32(h.Http2MaxRequests))
		}
		if h.MaxRetries > 0 {
			th.MaxRetries = u32(uint32(h.MaxRetries))
		}
		if h.MaxRequestsPerConnection > 0 || h.IdleTimeout != nil {
			httpOpts = &core.HttpProtocolOptions{IdleTimeout: h.IdleTimeout}
			if h.MaxRequestsPerConnection > 0 {
				httpOpts.MaxRequestsPerConnection = u32(uint32(h.MaxRequestsPerConnection))
			}
		}
	}
	c.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{th}}
	if httpOpts != nil || proto.IsHTTP2() {
		setHTTPProtocolOptions(c, httpOpts, proto.IsHTTP2())
	}
}

func setHTTPProtocolOptions(c *clusterv3.Cluster, common *core.HttpProtocolOptions, http2 bool) {
	opts := &httpv3.HttpProtocolOptions{CommonHttpProtocolOptions: common}
	if http2 {
		opts.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &core.Http2ProtocolOptions{}}}}
	} else {
		opts.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &core.Http1ProtocolOptions{}}}}
	}
	a := protoconv.MessageToAny(opts)
	c.TypedExtensionProtocolOptions = map[string]*anypb.Any{"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": a}
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
