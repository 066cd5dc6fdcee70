package xds

import (
	"sort"
	"sync"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/cluster"
	"github.com/meshplane/istiod/pilot/pkg/networking/endpoint"
	"github.com/meshplane/istiod/pkg/config"
)

// endpoints is the sidecar EDS generator: one load assignment per watched
// outbound cluster. An assignment depends on the proxy only through what
// its sidecar scope sees (service, destination rule), its network and its
// locality, so proxies that share those share it (see edsCache).
func (g *SidecarGenerators) endpoints(proxy *model.Proxy, w *WatchedResource, req *model.PushRequest) ([]*discovery.Resource, error) {
	push := req.Push
	names := w.Names()
	sort.Strings(names)
	var out []*discovery.Resource
	for _, name := range names {
		dir, subset, host, port, ok := cluster.ParseSubsetKey(name)
		if !ok || dir != cluster.Outbound {
			continue
		}
		svc := push.ServiceForHostname(proxy, host)
		if svc == nil {
			out = append(out, toResources(g.Invalid, push, EndpointType, []*loadAssignment{endpoint.Build(name, nil, endpoint.Options{})}, clusterNameOf)...)
			continue
		}
		p, ok := svc.Ports.GetByPort(port)
		if !ok {
			continue
		}
		eps, version := g.orderedEndpoints(svc)
		key := edsKey{cluster: name, scope: scopeID(push, proxy), network: proxyNetwork(proxy), locality: proxy.Locality}
		out = append(out, g.eds.get(push, key, version, func() []*discovery.Resource {
			la := loadAssignmentFor(push, proxy, svc, p, subset, name, eps)
			return toResources(g.Invalid, push, EndpointType, []*loadAssignment{la}, clusterNameOf)
		})...)
	}
	return out, nil
}

func clusterNameOf(l *loadAssignment) string { return l.ClusterName }

// loadAssignmentFor builds the assignment of one cluster of a service port
// (and subset) from the service's endpoints.
func loadAssignmentFor(push *model.PushContext, proxy *model.Proxy, svc *model.Service, p *model.Port, subset, name string, eps []*model.IstioEndpoint) *loadAssignment {
	opts := endpoint.Options{PortName: p.Name, Network: proxyNetwork(proxy)}
	dr := destinationRule(push, proxy, svc)
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

// edsCache keeps the load assignments built for one PushContext, each with
// the endpoint index version it was built from. A full push (new
// PushContext: services or destination rules may have changed) empties it;
// an endpoint change moves the service's version, so its assignments are
// rebuilt on the next request and every other one is reused. This is what
// makes an endpoint-only push cost one build per cluster and namespace, not
// one per connection.
type edsCache struct {
	mu      sync.Mutex
	push    *model.PushContext
	entries map[edsKey]edsEntry
}

type edsKey struct {
	cluster  string
	scope    string // the proxy's sidecar scope: it decides service and rule visibility
	network  string
	locality string
}

type edsEntry struct {
	version uint64
	res     []*discovery.Resource
}

// get returns the resources cached for key at version under push, building
// them on a miss. The returned slice is shared: callers must not modify it.
func (c *edsCache) get(push *model.PushContext, key edsKey, version uint64, build func() []*discovery.Resource) []*discovery.Resource {
	c.mu.Lock()
	if c.push != push {
		c.push = push
		c.entries = map[edsKey]edsEntry{}
	}
	if e, ok := c.entries[key]; ok && e.version == version {
		c.mu.Unlock()
		return e.res
	}
	c.mu.Unlock()
	res := build()
	c.mu.Lock()
	if c.push == push {
		if e, ok := c.entries[key]; !ok || e.version <= version {
			c.entries[key] = edsEntry{version: version, res: res}
		}
	}
	c.mu.Unlock()
	return res
}
