package kube

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// GetProxyServiceTargets finds the workload of a proxy — the pod with one
// of its IPs (in its namespace when known), else its labels in its namespace
// — and returns the services of the pod's namespace that select it, one
// target per service port. A named targetPort resolves through the pod's
// container ports; a pod that lacks it does not serve that port.
func (c *Controller) GetProxyServiceTargets(q *model.ProxyQuery) []model.ServiceTarget {
	if q == nil || (q.ClusterID != "" && q.ClusterID != c.opts.ClusterID) {
		return nil
	}
	if out, ok := c.proxyEntryTargets(q); ok {
		return out
	}
	for _, ip := range q.IPAddresses {
		if w := c.workloadByIP(q.Namespace, ip); w != nil {
			return c.targetsFor(w.Namespace, w.Labels, w.PortMap, true)
		}
	}
	if len(q.Labels) > 0 && q.Namespace != "" {
		return c.targetsFor(q.Namespace, q.Labels, nil, false)
	}
	return nil
}

// workloadByIP finds the pod with an IP: directly in namespace ns when
// known, else by scanning (proxies normally know their namespace).
func (c *Controller) workloadByIP(ns, ip string) *model.WorkloadInstance {
	var entry *podIP
	if ns != "" {
		entry = c.podIPs.GetKey(ns + "/" + ip)
	} else {
		for _, p := range c.podIPs.List() {
			if _, addr, _ := strings.Cut(p.key, "/"); addr == ip {
				entry = &p
				break
			}
		}
	}
	if entry == nil {
		return nil
	}
	return c.workloads.GetKey(entry.workload)
}

func (c *Controller) targetsFor(ns string, labels map[string]string, ports map[string]uint32, known bool) []model.ServiceTarget {
	var out []model.ServiceTarget
	for _, s := range c.servicesByNS.Lookup(ns) {
		sel := s.svc.Attributes.LabelSelectors
		if len(sel) == 0 || !subset(sel, labels) {
			continue
		}
		for _, p := range s.svc.Ports {
			tp, ok := resolveTargetPort(s.targetPorts[p.Port], p.Port, ports, known)
			if !ok {
				continue
			}
			out = append(out, model.ServiceTarget{Service: s.svc, Port: model.ServiceInstancePort{Port: p, TargetPort: tp}})
		}
	}
	return out
}

// resolveTargetPort returns the workload port behind a service port: the
// numeric targetPort, the named container port, or the service port when
// targetPort is unset. A named port is only checked when the workload's
// ports are known.
func resolveTargetPort(tp intstr.IntOrString, svcPort int, ports map[string]uint32, known bool) (uint32, bool) {
	switch {
	case tp.Type == intstr.String && tp.StrVal != "":
		if p, ok := ports[tp.StrVal]; ok {
			return p, true
		}
		if known {
			return 0, false
		}
		return uint32(svcPort), true
	case tp.IntVal > 0:
		return uint32(tp.IntVal), true
	}
	return uint32(svcPort), true
}

func subset(small, big map[string]string) bool {
	for k, v := range small {
		if bv, ok := big[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// GetProxyWorkloadLabels returns the labels of the proxy's pod, found by
// the name and namespace of its node ID (pod.namespace, when the namespace
// is the one its metadata names), with the topology labels of the pod's
// cluster, locality, node and network; nil when there is no such pod. As
// in Istio, a pod is not looked up by IP (ENABLE_PROXY_FIND_POD_BY_IP is
// off by default there).
func (c *Controller) GetProxyWorkloadLabels(proxy *model.Proxy) map[string]string {
	name, ns, ok := strings.Cut(proxy.ID, ".")
	if !ok || proxy.Metadata == nil || proxy.Metadata.Namespace != ns {
		return nil
	}
	w := c.workloads.GetKey(ns + "/" + name)
	if w == nil || w.Endpoint == nil {
		return nil
	}
	return w.Endpoint.Labels
}

var _ model.WorkloadLabeler = (*Controller)(nil)
