package model

import (
	"strings"
	"sync"

	meshconfig "istio.io/api/mesh/v1alpha1"

	"github.com/meshplane/istiod/pkg/config/host"
)

// ClusterLocalHosts say which hosts are cluster-local: a proxy reaches
// their endpoints in its own cluster only. They come from the mesh
// config's serviceSettings (clusterLocal true or false per host or
// wildcard) over Istio's defaults: every service of kube-system, the
// kubernetes.default Service and the host of the discovery address. A
// serviceSettings entry with clusterLocal false naming a default (the
// same host, or one under a default wildcard) removes that default.
type ClusterLocalHosts struct {
	specific map[string]bool
	wildcard map[string]bool
}

// NewClusterLocalHosts computes them for a mesh config and cluster domain.
func NewClusterLocalHosts(m *meshconfig.MeshConfig, domainSuffix string) ClusterLocalHosts {
	defaults := []string{"*.kube-system.svc." + domainSuffix, "kubernetes.default.svc." + domainSuffix}
	if addr := m.GetDefaultConfig().GetDiscoveryAddress(); addr != "" {
		h := addr
		if i := strings.LastIndex(addr, ":"); i > 0 {
			h = addr[:i]
		}
		if !strings.HasSuffix(h, domainSuffix) {
			h += "." + domainSuffix
		}
		defaults = append(defaults, h)
	}
	out := ClusterLocalHosts{specific: map[string]bool{}, wildcard: map[string]bool{}}
	for _, ss := range m.GetServiceSettings() {
		local := ss.GetSettings().GetClusterLocal()
		for _, h := range ss.GetHosts() {
			if !local {
				for i, d := range defaults {
					if d != "" && (h == d || (host.IsWildcard(d) && strings.HasSuffix(h, d[1:]))) {
						defaults[i] = ""
					}
				}
			}
			if host.IsWildcard(h) {
				out.wildcard[h] = local
			} else {
				out.specific[h] = local
			}
		}
	}
	for _, d := range defaults {
		switch {
		case d == "":
		case host.IsWildcard(d):
			out.wildcard[d] = true
		default:
			out.specific[d] = true
		}
	}
	return out
}

// IsClusterLocal tells whether h is cluster-local: the setting of h
// itself, else of the most specific wildcard matching it, else false.
func (c ClusterLocalHosts) IsClusterLocal(h string) bool {
	if v, ok := c.specific[h]; ok {
		return v
	}
	best, local := "", false
	for w, v := range c.wildcard {
		if host.SubsetOf(h, w) && (len(w) > len(best) || (len(w) == len(best) && w < best)) {
			best, local = w, v
		}
	}
	return local
}

// clusterLocal is computed once per snapshot, on first use.
type clusterLocal struct {
	once  sync.Once
	hosts ClusterLocalHosts
}

// IsClusterLocal tells whether a service's endpoints are reachable only
// from proxies of their own cluster.
func (p *PushContext) IsClusterLocal(svc *Service) bool {
	if svc == nil {
		return false
	}
	p.clusterLocal.once.Do(func() { p.clusterLocal.hosts = NewClusterLocalHosts(p.Mesh, p.domainSuffix) })
	return p.clusterLocal.hosts.IsClusterLocal(svc.Hostname)
}
