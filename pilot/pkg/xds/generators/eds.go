package generators

import (
	"sort"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/endpoint"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pkg/config"
)

// endpoints is the sidecar EDS generator: one load assignment per watched
// outbound cluster. An assignment depends on the proxy only through what
// its sidecar scope sees (service, destination rule), its network, its
// locality and, when network gateways exist, its IP family and type, so
// proxies that share those share it (see edsKey).
func (g *SidecarGenerators) endpoints(proxy *model.Proxy, w *xds.WatchedResource, req *model.PushRequest) (xds.Generated, error) {
	push := req.Push
	names := w.Names()
	sort.Strings(names)
	// a push that changed some services' endpoints only regenerates (and
	// sends) their assignments, as Istio's does
	updated, partial := model.PartialEndpointHosts(req)
	out := xds.Generated{Partial: partial}
	for _, name := range names {
		dir, subset, host, port, ok := cluster.ParseSubsetKey(name)
		sniDNAT := false
		if !ok {
			// the SNI-DNAT clusters of AUTO_PASSTHROUGH gateways
			subset, host, port, ok = cluster.ParseSNI(name)
			dir, sniDNAT = cluster.Outbound, ok
		}
		if !ok || dir != cluster.Outbound {
			continue
		}
		if _, changed := updated[host]; partial && !changed {
			continue
		}
		svc := push.ServiceForHostname(proxy, host)
		if svc == nil {
			out.Append(toResources(g.enc, xds.EndpointType, []*loadAssignment{endpoint.Build(name, nil, endpoint.Options{})}, clusterNameOf))
			continue
		}
		p, ok := svc.Ports.GetByPort(port)
		if !ok {
			continue
		}
		eps, version := g.orderedEndpoints(svc)
		dr := destinationRule(push, proxy, svc)
		key := edsKey{cluster: name, svc: svc, rule: dr, network: proxyNetwork(proxy), locality: proxy.Locality,
			gateways: push.NetworkGateways(), networkView: strings.Join(networkView(proxy), ",")}
		if key.gateways.IsMultiNetworkEnabled() {
			// which gateways a proxy may use depends on its IP family and type
			key.ipMode, key.sidecar = proxy.IPMode(), proxy.Type == model.SidecarProxy
		}
		if push.IsClusterLocal(svc) {
			// only the endpoints of the proxy's own cluster, as Istio
			// keeps a cluster-local service's
			key.local = proxy.ClusterID()
			eps = clusterEndpoints(eps, key.local)
		}
		out.Append(g.eds.get(&g.slots, push, key, version, func() xds.Generated {
			la := loadAssignmentFor(push, proxy, dr.Rule(), svc, p, subset, name, eps)
			if sniDNAT {
				// only mTLS endpoints: a plain-text one would take what a
				// passthrough client meant to be mTLS
				endpoint.KeepMTLS(la)
			}
			return toResources(g.enc, xds.EndpointType, []*loadAssignment{la}, clusterNameOf)
		}))
	}
	return out, nil
}

func clusterNameOf(l *loadAssignment) string { return l.ClusterName }

// clusterEndpoints are the endpoints of one cluster.
func clusterEndpoints(eps []*model.IstioEndpoint, cluster string) []*model.IstioEndpoint {
	out := make([]*model.IstioEndpoint, 0, len(eps))
	for _, ep := range eps {
		if ep.Locality.ClusterID == cluster {
			out = append(out, ep)
		}
	}
	return out
}

// loadAssignmentFor builds the assignment of one cluster of a service port
// (and subset) from the service's endpoints.
func loadAssignmentFor(push *model.PushContext, proxy *model.Proxy, dr *config.Config, svc *model.Service, p *model.Port, subset, name string, eps []*model.IstioEndpoint) *loadAssignment {
	opts := endpoint.Options{PortName: p.Name, Network: proxyNetwork(proxy), Gateways: push.NetworkGateways(),
		IPMode: proxy.IPMode(), Sidecar: proxy.Type == model.SidecarProxy, NetworkView: networkView(proxy)}
	var subsetPolicy *networking.TrafficPolicy
	if subset != "" {
		opts.SubsetLabels, subsetPolicy = subsetOf(dr, subset)
		if opts.SubsetLabels == nil {
			return endpoint.Build(name, nil, endpoint.Options{})
		}
	}
	la := endpoint.Build(name, eps, opts)
	if proxy.Locality != "" {
		var root *networking.TrafficPolicy
		if dr != nil {
			root = dr.Spec.(*networking.DestinationRule).GetTrafficPolicy()
		}
		pol := cluster.MergeTrafficPolicy(root, subsetPolicy, p.Port)
		endpoint.ApplyLocalityLB(la, endpoint.ParseLocality(proxy.Locality), cluster.LocalitySetting(pol, push.Mesh), pol.GetOutlierDetection() != nil)
	}
	return la
}

// orderedEndpoints are a service's endpoints from every shard and the
// version of the index entry they come from (0 when it has none).
func (g *SidecarGenerators) orderedEndpoints(svc *model.Service) ([]*model.IstioEndpoint, uint64) {
	if g.Endpoints == nil {
		return nil, 0
	}
	shards, ok := g.Endpoints.ShardsFor(svc.Hostname, svc.Attributes.Namespace)
	if !ok {
		return nil, 0
	}
	return shards.Ordered()
}

// endpointsVersion is the version orderedEndpoints would return, without
// building the list.
func (g *SidecarGenerators) endpointsVersion(svc *model.Service) uint64 {
	if g.Endpoints == nil {
		return 0
	}
	shards, ok := g.Endpoints.ShardsFor(svc.Hostname, svc.Attributes.Namespace)
	if !ok {
		return 0
	}
	return shards.Version()
}

func portEndpoints(eps []*model.IstioEndpoint, p *model.Port) []*model.IstioEndpoint {
	var out []*model.IstioEndpoint
	for _, ep := range eps {
		if ep.ServicePortName == p.Name {
			out = append(out, ep)
		}
	}
	return out
}

func proxyNetwork(p *model.Proxy) string {
	if p.Metadata == nil {
		return ""
	}
	return p.Metadata.Network
}

func networkView(p *model.Proxy) []string {
	if p.Metadata == nil {
		return nil
	}
	return p.Metadata.RequestedNetworkView
}

// subsetOf returns a subset's labels (nil when the rule has no such subset)
// and its traffic policy.
func subsetOf(dr *config.Config, subset string) (map[string]string, *networking.TrafficPolicy) {
	if dr == nil {
		return nil, nil
	}
	spec, _ := dr.Spec.(*networking.DestinationRule)
	for _, s := range spec.GetSubsets() {
		if s.Name == subset {
			if s.Labels == nil {
				return map[string]string{}, s.TrafficPolicy
			}
			return s.Labels, s.TrafficPolicy
		}
	}
	return nil, nil
}
