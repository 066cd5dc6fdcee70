package xds

import (
	"net/http"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// connectionFor finds a connection by proxy ID (pod.namespace).
func (s *DiscoveryServer) connectionFor(proxyID string) *Connection {
	for _, c := range s.Connections() {
		if c.proxy.ID == proxyID {
			return c
		}
	}
	return nil
}

// generateFor runs the proxy's generator of a type with its current watch
// and the current snapshot.
func (s *DiscoveryServer) generateFor(c *Connection, typeURL string) []*discovery.Resource {
	w := c.Watched(typeURL)
	if w == nil {
		w = &WatchedResource{TypeURL: typeURL, Wildcard: isWildcardType(typeURL)}
	}
	gen := s.gens.find(c.proxy, typeURL)
	ps := s.push.Load()
	if gen == nil || ps == nil {
		return nil
	}
	res, err := gen.Generate(c.proxy, w, &model.PushRequest{Full: true, Push: ps.ctx})
	if err != nil {
		return nil
	}
	return res
}

func (s *DiscoveryServer) proxyFromRequest(w http.ResponseWriter, r *http.Request) *Connection {
	id := r.URL.Query().Get("proxyID")
	if id == "" {
		http.Error(w, "proxyID=<pod>.<namespace> is required", http.StatusBadRequest)
		return nil
	}
	c := s.connectionFor(id)
	if c == nil {
		http.Error(w, "proxy "+id+" is not connected", http.StatusNotFound)
		return nil
	}
	return c
}

// ConfigDumpHandler serves /debug/config_dump?proxyID=<pod>.<ns>: what the
// proxy would be sent now, in Envoy's ConfigDump shape.
func (s *DiscoveryServer) ConfigDumpHandler(w http.ResponseWriter, r *http.Request) {
	c := s.proxyFromRequest(w, r)
	if c == nil {
		return
	}
	clusters := &adminv3.ClustersConfigDump{}
	for _, res := range s.generateFor(c, ClusterType) {
		clusters.DynamicActiveClusters = append(clusters.DynamicActiveClusters, &adminv3.ClustersConfigDump_DynamicCluster{Cluster: res.Resource})
	}
	listeners := &adminv3.ListenersConfigDump{}
	for _, res := range s.generateFor(c, ListenerType) {
		listeners.DynamicListeners = append(listeners.DynamicListeners, &adminv3.ListenersConfigDump_DynamicListener{
			Name: res.Name, ActiveState: &adminv3.ListenersConfigDump_DynamicListenerState{Listener: res.Resource}})
	}
	routes := &adminv3.RoutesConfigDump{}
	for _, res := range s.generateFor(c, RouteType) {
		routes.DynamicRouteConfigs = append(routes.DynamicRouteConfigs, &adminv3.RoutesConfigDump_DynamicRouteConfig{RouteConfig: res.Resource})
	}
	endpoints := &adminv3.EndpointsConfigDump{}
	for _, res := range s.generateFor(c, EndpointType) {
		endpoints.DynamicEndpointConfigs = append(endpoints.DynamicEndpointConfigs, &adminv3.EndpointsConfigDump_DynamicEndpointConfig{EndpointConfig: res.Resource})
	}
	dump := &adminv3.ConfigDump{}
	for _, m := range []proto.Message{clusters, listeners, routes, endpoints} {
		a, _ := anypb.New(m)
		dump.Configs = append(dump.Configs, a)
	}
	writeProto(w, dump)
}

// EdszHandler serves /debug/edsz?proxyID=<pod>.<ns>: the endpoints the proxy
// watches, as it would be sent them now.
func (s *DiscoveryServer) EdszHandler(w http.ResponseWriter, r *http.Request) {
	c := s.proxyFromRequest(w, r)
	if c == nil {
		return
	}
	dump := &adminv3.EndpointsConfigDump{}
	for _, res := range s.generateFor(c, EndpointType) {
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
