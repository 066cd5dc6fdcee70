package debug

import (
	"errors"
	"fmt"
	"net/http"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// errNotConnected says no proxy of that ID is connected here.
var errNotConnected = errors.New("not connected")

// configDump builds what the proxy would be sent now, in Envoy's
// ConfigDump shape (clusters, listeners, routes, endpoints).
func configDump(src XDSSource, proxyID string) (*adminv3.ConfigDump, error) {
	gen := map[string][]*discovery.Resource{}
	for _, t := range []string{xds.ClusterType, xds.ListenerType, xds.RouteType, xds.EndpointType} {
		g, connected, err := src.GenerateFor(proxyID, t)
		switch {
		case !connected:
			return nil, fmt.Errorf("proxy %s is %w", proxyID, errNotConnected)
		case err != nil:
			return nil, fmt.Errorf("generating %s: %w", xds.ShortType(t), err)
		}
		gen[t] = g.Resources
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
			return nil, err
		}
		dump.Configs = append(dump.Configs, a)
	}
	return dump, nil
}

func proxyID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.URL.Query().Get("proxyID")
	if id == "" {
		http.Error(w, "proxyID=<pod>.<namespace> is required", http.StatusBadRequest)
		return "", false
	}
	return id, true
}

// configDumpHandler serves /debug/config_dump?proxyID=<pod>.<ns>.
func (d *Debug) configDumpHandler(w http.ResponseWriter, r *http.Request) {
	id, ok := proxyID(w, r)
	if !ok {
		return
	}
	dump, err := configDump(d.opts.XDS, id)
	switch {
	case errors.Is(err, errNotConnected):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
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
	g, connected, err := d.opts.XDS.GenerateFor(id, xds.EndpointType)
	switch {
	case !connected:
		http.Error(w, "proxy "+id+" is not connected", http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	dump := &adminv3.EndpointsConfigDump{}
	for _, res := range g.Resources {
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
