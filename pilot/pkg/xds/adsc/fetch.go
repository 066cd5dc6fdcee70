package adsc

import (
	"context"
	"errors"
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
	asked := map[string][]string{} // by type: the names last asked for
	if err := follow(c, endpointType, c.EDSServiceNames, asked); err != nil {
		return nil, err
	}
	if err := c.Watch(listenerType); err != nil {
		return nil, err
	}
	if err := awaitType(c, listenerType); err != nil {
		return nil, err
	}
	if err := follow(c, routeType, c.RouteConfigNames, asked); err != nil {
		return nil, err
	}
	// A push may have come between two requests (a config change while
	// the client asked): new clusters or listeners then name load
	// assignments or route configurations not asked for yet. Ask again,
	// as Envoy does, until a quiet moment finds the subscriptions
	// complete.
	for round := 0; ; round++ {
		if err := quiet(c); err != nil {
			return nil, err
		}
		eds, rds := !slices.Equal(asked[endpointType], c.EDSServiceNames()), !slices.Equal(asked[routeType], c.RouteConfigNames())
		if !eds && !rds {
			break
		}
		if round == maxFollowRounds {
			return nil, fmt.Errorf("subscriptions still changing after %d rounds: the control plane keeps pushing", round)
		}
		if eds {
			if err := follow(c, endpointType, c.EDSServiceNames, asked); err != nil {
				return nil, err
			}
		}
		if rds {
			if err := follow(c, routeType, c.RouteConfigNames, asked); err != nil {
				return nil, err
			}
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

// maxFollowRounds bounds how often Fetch asks again for names that pushes
// added while it asked.
const maxFollowRounds = 20

// quietWait is how long Fetch waits for a push before it takes the
// stream as quiet; quietMax bounds the wait when pushes keep coming (the
// subscriptions are then checked as they are).
const quietWait, quietMax = 200 * time.Millisecond, 2 * time.Second

// follow subscribes to the names of typ that what is held names (none:
// no request) and waits for the answer; asked records them.
func follow(c *Client, typ string, names func() []string, asked map[string][]string) error {
	ns := names()
	asked[typ] = ns
	if len(ns) == 0 {
		return nil
	}
	if err := c.Watch(typ, ns...); err != nil {
		return err
	}
	return awaitType(c, typ)
}

// quiet reads responses until none comes within quietWait, or for
// quietMax.
func quiet(c *Client) error {
	for start := time.Now(); time.Since(start) < quietMax; {
		if _, err := c.Next(quietWait); err != nil {
			if errors.Is(err, errNoResponse) {
				return nil
			}
			return err
		}
	}
	return nil
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
