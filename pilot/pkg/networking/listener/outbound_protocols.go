package listener

import (
	"net"
	"strconv"
	"sync"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	mongo "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/mongo_proxy/v3"
	redis "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/redis_proxy/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/protoconv"
)

// Network filters of the protocols Envoy proxies natively.
const (
	TCPProxyFilter   = "envoy.filters.network.tcp_proxy"
	MongoProxyFilter = "envoy.filters.network.mongo_proxy"
	RedisProxyFilter = "envoy.filters.network.redis_proxy"
	MySQLProxyFilter = "envoy.filters.network.mysql_proxy"
)

// redisOpTimeout bounds each Redis operation, as Istio sets it.
var redisOpTimeout = durationpb.New(5 * time.Second)

// ProtocolFilters switch the protocol filters of TCP chains, outbound and
// inbound, as Istio's PILOT_ENABLE_MONGO_FILTER (on by default),
// PILOT_ENABLE_REDIS_FILTER and PILOT_ENABLE_MYSQL_FILTER (off by default)
// do; the zero value is Istio's default.
type ProtocolFilters struct {
	// NoMongo leaves mongo_proxy out of Mongo ports' chains.
	NoMongo bool
	// Redis replaces the TCP proxy of Redis ports' chains by redis_proxy.
	Redis bool
	// MySQL puts mysql_proxy before the TCP proxy of MySQL ports' chains.
	MySQL bool
}

// tcpChainFilters are the network filters of an outbound TCP chain, by the
// protocol of the port it was built for (protocolStack); redis_proxy's
// catch-all route goes to the chain's cluster, the first weighted one when
// there are several (Istio names only one).
func tcpChainFilters(c *egressChain, o Options) []*listenerv3.Filter {
	tp := tcpChainProxy(c, o)
	tcp := &listenerv3.Filter{Name: TCPProxyFilter, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: protoconv.MessageToAny(tp)}}
	name := c.cluster
	if len(c.weighted) > 0 {
		name = c.weighted[0].Name
	}
	stack := o.TCP.Protocols.stack(c.stack, tcp, tp.StatPrefix, name)
	if c.dynamicDNS != "" {
		// after the stats filters, right before the protocol stack
		stack = append([]*listenerv3.Filter{sniDynamicForwardProxy(c.dynamicDNSPort, o.serviceDNSCacheOf(c.dynamicDNS))}, stack...)
	}
	return stack
}

// stack is the end of a TCP chain for a port's protocol, as Istio's
// buildNetworkFiltersStack builds it on both sides: mongo_proxy then the
// TCP proxy (Mongo), redis_proxy alone, its catch-all route to
// clusterName (Redis), mysql_proxy then the TCP proxy (MySQL), else the TCP
// proxy; the protocol filters take the TCP proxy's stat prefix.
func (f ProtocolFilters) stack(p protocol.Instance, tcp *listenerv3.Filter, statPrefix, clusterName string) []*listenerv3.Filter {
	switch {
	case p == protocol.Mongo && !f.NoMongo:
		return []*listenerv3.Filter{typedFilter(MongoProxyFilter, &mongo.MongoProxy{StatPrefix: statPrefix}), tcp}
	case p == protocol.Redis && f.Redis:
		return []*listenerv3.Filter{typedFilter(RedisProxyFilter, &redis.RedisProxy{
			LatencyInMicros: true,
			StatPrefix:      statPrefix,
			Settings:        &redis.RedisProxy_ConnPoolSettings{OpTimeout: redisOpTimeout},
			PrefixRoutes: &redis.RedisProxy_PrefixRoutes{
				CatchAllRoute: &redis.RedisProxy_PrefixRoutes_Route{Cluster: clusterName},
			},
		})}
	case p == protocol.MySQL && f.MySQL:
		return []*listenerv3.Filter{typedFilter(MySQLProxyFilter, mysqlProxy(statPrefix)), tcp}
	}
	return []*listenerv3.Filter{tcp}
}

func typedFilter(name string, m proto.Message) *listenerv3.Filter {
	return &listenerv3.Filter{Name: name, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: protoconv.MessageToAny(m)}}
}

// isProtocolStack names the filters that end a TCP chain: the side's TCP
// stats filters go right before the first of them.
func isProtocolStack(name string) bool {
	switch name {
	case TCPProxyFilter, MongoProxyFilter, RedisProxyFilter, MySQLProxyFilter, sniDynamicForwardProxyName:
		return true
	}
	return false
}

// tcpChainProxy renders a TCP chain's proxy with the side's access log.
func tcpChainProxy(c *egressChain, o Options) *tcpproxy.TcpProxy {
	stat := c.statPrefix
	if stat == "" {
		stat = c.cluster
	}
	tp := &tcpproxy.TcpProxy{StatPrefix: stat, ClusterSpecifier: &tcpproxy.TcpProxy_Cluster{Cluster: c.cluster}}
	if len(c.weighted) > 0 {
		tp = &tcpproxy.TcpProxy{StatPrefix: stat, ClusterSpecifier: &tcpproxy.TcpProxy_WeightedClusters{
			WeightedClusters: &tcpproxy.TcpProxy_WeightedCluster{Clusters: c.weighted}}}
	}
	if c.hashSourceIP {
		tp.HashPolicy = sourceIPHash()
	}
	tp.IdleTimeout, tp.MaxDownstreamConnectionDuration = c.idle, c.maxDuration
	tp.TunnelingConfig = c.tunnel
	tp.AccessLog = o.accessLogs()
	return tp
}

// tcpTimeouts are the idle timeout and maximum connection duration of a
// TCP proxy to a DestinationRule's host: its top-level tcp pool's, as Istio
// reads them (port-level and subset pools are not looked at there), the
// idle timeout falling back to the proxy's IDLE_TIMEOUT.
func (o Options) tcpTimeouts(dr *networking.DestinationRule) (idle, maxDuration *durationpb.Duration) {
	tcp := dr.GetTrafficPolicy().GetConnectionPool().GetTcp()
	idle = tcp.GetIdleTimeout()
	if idle == nil {
		idle = o.IdleTimeout
	}
	return idle, tcp.GetMaxConnectionDuration()
}

// tunnelConfig is the tcp_proxy tunneling of a DestinationRule's tunnel:
// a subset's own ("" : the rule's top-level one; a subset without a
// tunnel has none, the rule's is not inherited), as Istio applies it.
func tunnelConfig(dr *networking.DestinationRule, subset string) *tcpproxy.TcpProxy_TunnelingConfig {
	var t *networking.TrafficPolicy_TunnelSettings
	if subset == "" {
		t = dr.GetTrafficPolicy().GetTunnel()
	} else {
		for _, s := range dr.GetSubsets() {
			if s.GetName() == subset {
				t = s.GetTrafficPolicy().GetTunnel()
				break
			}
		}
	}
	if t == nil {
		return nil
	}
	return &tcpproxy.TcpProxy_TunnelingConfig{
		Hostname: net.JoinHostPort(t.GetTargetHost(), strconv.Itoa(int(t.GetTargetPort()))),
		UsePost:  t.GetProtocol() == "POST",
	}
}

// ParseIdleTimeout reads the proxy's IDLE_TIMEOUT as Istio does: a Go
// duration, nil when empty or invalid.
func ParseIdleTimeout(s string) *durationpb.Duration {
	if s == "" {
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil
	}
	return durationpb.New(d)
}

// The MySQL proxy's config lives in go-control-plane's contrib module,
// which this module does not depend on; its message is described here
// (the two string fields Istio uses, under the same full name and field
// numbers, so the wire bytes are the same) and registered, unless the
// real one already is, so that JSON renderings of listeners resolve it.
var mysqlType = sync.OnceValue(func() protoreflect.MessageType {
	const full = "envoy.extensions.filters.network.mysql_proxy.v3.MySQLProxy"
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(full); err == nil {
		return mt
	}
	str := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("contrib/envoy/extensions/filters/network/mysql_proxy/v3/mysql_proxy.proto"),
		Package: proto.String("envoy.extensions.filters.network.mysql_proxy.v3"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("MySQLProxy"),
			Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("stat_prefix"), JsonName: proto.String("statPrefix"), Number: proto.Int32(1), Type: str, Label: opt},
				{Name: proto.String("access_log"), JsonName: proto.String("accessLog"), Number: proto.Int32(2), Type: str, Label: opt},
			},
		}},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		panic("mysql_proxy descriptor: " + err.Error()) // a constant descriptor: cannot fail
	}
	mt := dynamicpb.NewMessageType(fd.Messages().Get(0))
	_ = protoregistry.GlobalTypes.RegisterMessage(mt)
	return mt
})

// mysqlProxy is the MySQL proxy's config with its stat prefix.
func mysqlProxy(statPrefix string) proto.Message {
	mt := mysqlType()
	m := mt.New()
	m.Set(mt.Descriptor().Fields().ByName("stat_prefix"), protoreflect.ValueOfString(statPrefix))
	return m.Interface()
}
