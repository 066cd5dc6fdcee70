package serviceentry

import "github.com/meshplane/istiod/pilot/pkg/model"

// GetProxyServiceTargets returns the ServiceEntry services that have an
// endpoint at one of the proxy's IPs, one target per service port, with the
// endpoint's port as target port. Only the services of the proxy's
// namespace count when it names one, as in Istio (a namespace cannot put
// its services on the workloads of another).
func (c *Controller) GetProxyServiceTargets(q *model.ProxyQuery) []model.ServiceTarget {
	if q == nil || (q.ClusterID != "" && q.ClusterID != c.opts.ClusterID) {
		return nil
	}
	var out []model.ServiceTarget
	seen := map[string]bool{}
	for _, ip := range q.IPAddresses {
		for _, info := range c.byAddress.Lookup(ip) {
			for _, svc := range info.services {
				if q.Namespace != "" && svc.Attributes.Namespace != q.Namespace {
					continue
				}
				for _, ep := range info.endpoints[svc.Hostname] {
					if ep.FirstAddress() != ip {
						continue
					}
					p, ok := svc.Ports.Get(ep.ServicePortName)
					k := svc.Key() + "/" + ep.ServicePortName
					if !ok || seen[k] {
						continue
					}
					seen[k] = true
					out = append(out, model.ServiceTarget{Service: svc,
						Port: model.ServiceInstancePort{Port: p, TargetPort: ep.EndpointPort}})
				}
			}
		}
	}
	return out
}

// GetProxyWorkloadLabels returns the labels of the workload entry with one
// of the proxy's IPs (of its namespace, when it names one), topology labels
// included; nil when there is none.
func (c *Controller) GetProxyWorkloadLabels(proxy *model.Proxy) map[string]string {
	ns := ""
	if proxy.Metadata != nil {
		ns = proxy.Metadata.Namespace
	}
	for _, ip := range proxy.IPAddresses {
		for _, info := range c.byAddress.Lookup(ip) {
			for _, svc := range info.services {
				if ns != "" && svc.Attributes.Namespace != ns {
					continue
				}
				for _, ep := range info.endpoints[svc.Hostname] {
					if ep.FirstAddress() == ip {
						return ep.Labels
					}
				}
			}
		}
	}
	return nil
}

var _ model.WorkloadLabeler = (*Controller)(nil)
