package adsc

import (
	"context"
	"fmt"
	"slices"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
)

// Type URLs of the four types Fetch asks for, in the order a proxy asks.
const (
	clusterType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	endpointType = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	listenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"
	routeType    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
)

// ShortTypes are the short names of the four types Fetch asks for.
var ShortTypes = []string{"cds", "eds", "lds", "rds"}

var shortType = map[string]string{clusterType: "cds", endpointType: "eds", listenerType: "lds", routeType: "rds"}

// Snapshot is what one control plane sent a proxy: short type (cds, eds,
// lds, rds) → name → resource.
type Snapshot map[string]map[string]proto.Message

// responseWait bounds the wait for one response; it guards against a
// hang, the harness polls anyway.
const responseWait = 15 * time.Second

// Fetch connects to addr as the proxy over state-of-the-world ADS and asks
// as Envoy does: every cluster, then the endpoints of the EDS clusters,
// every listener, then the route configurations the listeners' HTTP
// connection managers name. The stream is closed after the last answer.
func Fetch(ctx context.Context, addr string, cfg Config) (Snapshot, error) {
	att, err := DialUntilAccepted(ctx, addr, cfg, Backoff{Initial: 50 * time.Millisecond, Max: time.Second}, responseWait,
		func(c *Client) error { return c.Watch(clusterType) })
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %v", addr, err)
	}
	c := att.Client
	defer c.Close()
	if att.First.TypeURL != clusterType {
		if err := awaitType(c, clusterType); err != nil {
			return nil, err
		}
	}
	if names := c.EDSServiceNames(); len(names) > 0 {
		if err := c.Watch(endpointType, names...); err != nil {
			return nil, err
		}
		if err := awaitType(c, endpointType); err != nil {
			return nil, err
		}
	}
	if err := c.Watch(listenerType); err != nil {
		return nil, err
	}
	if err := awaitType(c, listenerType); err != nil {
		return nil, err
	}
	if names := c.RouteConfigNames(); len(names) > 0 {
		if err := c.Watch(routeType, names...); err != nil {
			return nil, err
		}
		if err := awaitType(c, routeType); err != nil {
			return nil, err
		}
	}
	out := Snapshot{}
	for typ, short := range shortType {
		out[short] = map[string]proto.Message{}
		for _, n := range c.State(typ) {
			out[short][n] = c.Resource(typ, n)
		}
	}
	return out, nil
}

// awaitType reads responses until one of typ arrives (a push of another type
// may come first).
func awaitType(c *Client, typ string) error {
	for {
		r, err := c.Next(responseWait)
		if err != nil {
			return fmt.Errorf("waiting for %s: %v", shortType[typ], err)
		}
		if r.TypeURL == typ {
			return nil
		}
	}
}

// EDSServiceNames are the service names of the EDS clusters held: what
// Envoy asks EDS for.
func (c *Client) EDSServiceNames() []string {
	var out []string
	for _, n := range c.State(clusterType) {
		cl, ok := c.Resource(clusterType, n).(*clusterv3.Cluster)
		if !ok || cl.GetType() != clusterv3.Cluster_EDS {
			continue
		}
		name := cl.GetEdsClusterConfig().GetServiceName()
		if name == "" {
			name = cl.GetName()
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RouteConfigNames are the route configurations the listeners held name:
// what Envoy asks RDS for.
func (c *Client) RouteConfigNames() []string {
	var out []string
	for _, n := range c.State(listenerType) {
		l, ok := c.Resource(listenerType, n).(*listenerv3.Listener)
		if !ok {
			continue
		}
		chains := slices.Clone(l.GetFilterChains())
		if l.GetDefaultFilterChain() != nil {
			chains = append(chains, l.GetDefaultFilterChain())
		}
		for _, fc := range chains {
			for _, f := range fc.GetFilters() {
				tc := f.GetTypedConfig()
				if tc == nil {
					continue
				}
				m := &hcm.HttpConnectionManager{}
				if tc.MessageIs(m) && tc.UnmarshalTo(m) == nil {
					if name := m.GetRds().GetRouteConfigName(); name != "" {
						out = append(out, name)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
