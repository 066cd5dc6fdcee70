package gateway

import (
	"slices"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/meshplane/istiod/pkg/config"
)

// ServiceFromKube describes a Kubernetes Service with the ready endpoints
// of its EndpointSlices.
func ServiceFromKube(svc *corev1.Service, endpointSlices []*discoveryv1.EndpointSlice, domain string) ServiceInfo {
	out := ServiceInfo{
		Hostname:      serviceHostname(svc.Name, svc.Namespace, domain),
		Namespace:     svc.Namespace,
		Name:          svc.Name,
		Kind:          "Service",
		Labels:        svc.Labels,
		Type:          string(svc.Spec.Type),
		EndpointPorts: map[int][]uint32{},
	}
	for _, ip := range svc.Spec.ClusterIPs {
		if ip != "" && ip != corev1.ClusterIPNone {
			out.Addresses = append(out.Addresses, ip)
		}
	}
	if len(out.Addresses) == 0 && svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		out.Addresses = []string{svc.Spec.ClusterIP}
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		switch {
		case in.IP != "":
			out.ExternalAddresses = append(out.ExternalAddresses, in.IP)
		case in.Hostname != "":
			out.ExternalAddresses = append(out.ExternalAddresses, in.Hostname)
		}
	}
	out.ExternalAddresses = append(out.ExternalAddresses, svc.Spec.ExternalIPs...)
	for _, p := range svc.Spec.Ports {
		out.Ports = append(out.Ports, ServicePort{Name: p.Name, Port: int(p.Port)})
		for _, es := range endpointSlices {
			for _, ep := range es.Ports {
				if orDefault(ep.Name, "") != p.Name || ep.Port == nil {
					continue
				}
				for _, e := range es.Endpoints {
					if e.Conditions.Ready == nil || *e.Conditions.Ready {
						for range e.Addresses {
							out.EndpointPorts[int(p.Port)] = append(out.EndpointPorts[int(p.Port)], uint32(*ep.Port))
						}
					}
				}
			}
		}
	}
	return out
}

// ServicesFromServiceEntry describes each host of a ServiceEntry, with its
// static endpoints (or, for DNS resolution without endpoints, the host
// itself as the endpoint).
func ServicesFromServiceEntry(cfg config.Config) []ServiceInfo {
	se, ok := cfg.Spec.(*networking.ServiceEntry)
	if !ok || se == nil {
		return nil
	}
	var ports []ServicePort
	eps := map[int][]uint32{}
	for _, p := range se.Ports {
		ports = append(ports, ServicePort{Name: p.Name, Port: int(p.Number)})
		target := p.TargetPort
		if target == 0 {
			target = p.Number
		}
		for _, e := range se.Endpoints {
			t := target
			if n, ok := e.Ports[p.Name]; ok {
				t = n
			}
			eps[int(p.Number)] = append(eps[int(p.Number)], t)
		}
		if len(se.Endpoints) == 0 && se.WorkloadSelector == nil && se.Resolution == networking.ServiceEntry_DNS {
			eps[int(p.Number)] = append(eps[int(p.Number)], target)
		}
	}
	out := make([]ServiceInfo, 0, len(se.Hosts))
	for _, h := range se.Hosts {
		out = append(out, ServiceInfo{
			Hostname:      h,
			Namespace:     cfg.Namespace,
			Name:          cfg.Name,
			Kind:          "ServiceEntry",
			Labels:        cfg.Labels,
			Ports:         slices.Clone(ports),
			Addresses:     slices.Clone(se.Addresses),
			EndpointPorts: eps,
		})
	}
	return out
}

// ResourceName keys a service by namespace and hostname.
func (s ServiceInfo) ResourceName() string { return s.Namespace + "/" + s.Hostname }

// ServiceEntryHosts are the hosts of a ServiceEntry (empty for another kind).
func ServiceEntryHosts(cfg config.Config) []string {
	if se, ok := cfg.Spec.(*networking.ServiceEntry); ok && se != nil {
		return se.Hosts
	}
	return []string{}
}
