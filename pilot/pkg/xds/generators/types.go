package generators

import (
	"strconv"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

type (
	clusterCfg     = clusterv3.Cluster
	loadAssignment = endpointv3.ClusterLoadAssignment
	listenerCfg    = listenerv3.Listener
	routeCfg       = routev3.RouteConfiguration
)

func atoi(s string) (int, error) { return strconv.Atoi(s) }
