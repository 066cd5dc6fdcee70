package debug

import (
	"net/http"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// generate runs the proxy's generator of a type (see
// xds.DiscoveryServer.GenerateFor), answering the request itself when the
// proxy is missing or generation fails; ok is false then.
func (d *Debug) generate(w http.ResponseWriter, proxyID string, typeURL string) ([]*discovery.Resource, bool) {
	g, connected, err := d.opts.XDS.GenerateFor(proxyID, typeURL)
	switch {
	case !connected:
		http.Error(w, "proxy "+proxyID+" is not connected", http.StatusNotFound)
		return nil, false
	case err != nil:
		http.Error(w, "generating "+xds.ShortType(typeURL)+": "+err.Error(), http.StatusInternalServerError)
		return nil, false
	}
	return g.Resources, true
}

func proxyID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.URL.Query().Get("proxyID")
	if id == "" {
		http.Error(w, "proxyID=<pod>.<namespace> is required", http.StatusBadRequest)
		return "", false
	}
	return id, true
}

// configDump serves /debug/config_dump?proxyID=<pod>.<ns>: what the proxy
// would be sent now, in Envoy's ConfigDump shape.
func (d *Debug) configDump(w http.ResponseWriter, r *http.Request) {
	id, ok := proxyID(w, r)
	if !ok {
		return
	}
	gen := map[string][]*discovery.Resource{}
	for _, t := range []string{xds.ClusterType, xds.ListenerType, xds.RouteType, xds.EndpointType} {
		if gen[t], ok = d.generate(w, id, t); !ok {
			return
		}
	}
	clusters := &adminv3.ClustersConfigDump{}
	for _, res := range gen[xds.ClusterType] {
		clusters.DynamicActiveClusters = append(clusters.DynamicActiveClusters, &adminv3.ClustersConfigDump_DynamicCluster{Cluster: res.Resource})
	}
	listeners := &adminv3.ListenersConfigDump{}
	for _, res := range gen[xds.ListenerType] {
		listeners.DynamicListeners = append(listeners.DynamicListeners, &adminv3.ListenersConfigDump_DynamicListener{
			Name: res.Name, ActiveState: &adminv3.ListenersConfigDump_DynamicListenerState{Listener: res.Resource}})
	}
	routes := &adminv3.RoutesConfigDump{}
	for _, res := range gen[xds.RouteType] {
		routes.DynamicRouteConfigs = append(routes.DynamicRouteConfigs, &adminv3.RoutesConfigDump_DynamicRouteConfig{RouteConfig: res.Resource})
	}
	endpoints := &adminv3.EndpointsConfigDump{}
	for _, res := range gen[xds.EndpointType] {
		endpoints.DynamicEndpointConfigs = append(endpoints.DynamicEndpointConfigs, &adminv3.EndpointsConfigDump_DynamicEndpointConfig{EndpointConfig: res.Resource})
	}
	dump := &adminv3.ConfigDump{}
	for _, m := range []proto.Message{clusters, listeners, routes, endpoints} {
		a, err := anypb.New(m)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		dump.Configs = append(dump.Configs, a)
	}
	writeProto(w, dump)
}

// edsz serves /debug/edsz?proxyID=<pod>.<ns>: the endpoints the proxy
// watches, as it would be sent them now.
func (d *Debug) edsz(w http.ResponseWriter, r *http.Request) {
	id, ok := proxyID(w, r)
	if !ok {
		return
	}
	res, ok := d.generate(w, id, xds.EndpointType)
	if !ok {
		return
	}
	dump := &adminv3.EndpointsConfigDump{}
	for _, res := range res {
		dump.DynamicEndpointConfigs = append(dump.DynamicEndpointConfigs, &adminv3.EndpointsConfigDump_DynamicEndpointConfig{EndpointConfig: res.Resource})
	}
	writeProto(w, dump)
}

func writeProto(w http.ResponseWriter, m proto.Message) {
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(m)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
