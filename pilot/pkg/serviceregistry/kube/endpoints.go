package kube

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// mcsServiceNameLabel marks slices of multi-cluster (MCS) services, which
// the registry does not read.
const mcsServiceNameLabel = "multicluster.kubernetes.io/service-name"

// sliceInfo is the endpoints of one EndpointSlice.
type sliceInfo struct {
	key       string // namespace/slice
	service   string // namespace/service
	namespace string
	endpoints []*model.IstioEndpoint
	problems  []string
}

func (s sliceInfo) ResourceName() string { return s.key }

func (s sliceInfo) Equals(o sliceInfo) bool {
	return s.key == o.key && s.service == o.service && model.EndpointsEqual(s.endpoints, o.endpoints) &&
		slices.Equal(s.problems, o.problems)
}

// buildSlice is the transform EndpointSlice → sliceInfo. Slices that do not
// belong to a Service are dropped.
func (c *Controller) buildSlice(ctx krt.HandlerContext, es *discoveryv1.EndpointSlice) *sliceInfo {
	st := krt.FetchOne(ctx, c.settings.AsCollection())
	svcName := es.Labels[discoveryv1.LabelServiceName]
	if st == nil || svcName == "" || es.Labels[mcsServiceNameLabel] != "" || !c.namespaceSelected(es.Namespace) {
		return nil
	}
	info := &sliceInfo{key: es.Namespace + "/" + es.Name, service: es.Namespace + "/" + svcName, namespace: es.Namespace}
	if es.AddressType == discoveryv1.AddressTypeFQDN {
		info.problems = []string{"FQDN EndpointSlices are not supported; slice ignored"}
		return info
	}
	svc := krt.FetchOne(ctx, c.services, krt.FilterKey(info.service))
	if svc == nil {
		if !ownedByService(es, svcName) {
			info.problems = []string{fmt.Sprintf("Service %s does not exist; its endpoints are not served until it does", info.service)}
		}
		return info
	}
	wls := c.fetchSliceWorkloads(ctx, es)
	var bare map[string]*model.IstioEndpoint // by network
	for _, e := range es.Endpoints {
		health := endpointHealth(e.Conditions)
		for _, addr := range e.Addresses {
			tmpl, ok := wls.template(es.Namespace, addr, e.TargetRef)
			if !ok {
				continue
			}
			if tmpl == nil {
				// no pod: the network is the address's
				network := c.endpointNetwork(ctx, addr, nil, st)
				if tmpl = bare[network]; tmpl == nil {
					if bare == nil {
						bare = map[string]*model.IstioEndpoint{}
					}
					tmpl = c.bareTemplate(network)
					bare[network] = tmpl
				}
			}
			addrs := []string{addr} // shared by the endpoints of each port: read-only
			for _, p := range es.Ports {
				ep := tmpl.ShallowCopy()
				ep.Addresses = addrs
				ep.HealthStatus = health
				ep.SendUnhealthyEndpoints = true
				if p.Port != nil {
					ep.EndpointPort = uint32(*p.Port)
				}
				if p.Name != nil {
					ep.ServicePortName = *p.Name
				}
				info.endpoints = append(info.endpoints, ep)
			}
		}
	}
	return info
}

// sliceWorkloads are the pods behind a slice's endpoints, by targetRef key
// (namespace/name) and by namespace/IP for endpoints without a targetRef.
type sliceWorkloads struct {
	byRef, byIP map[string]*model.WorkloadInstance
}

// fetchSliceWorkloads fetches, one batch per collection, the pods a
// slice's endpoints name and the pods holding its other addresses.
func (c *Controller) fetchSliceWorkloads(ctx krt.HandlerContext, es *discoveryv1.EndpointSlice) sliceWorkloads {
	var refs, ips []string
	for _, e := range es.Endpoints {
		if ref := e.TargetRef; ref != nil && ref.Kind == "Pod" {
			refs = append(refs, podRefKey(es.Namespace, ref))
			continue
		}
		for _, a := range e.Addresses {
			ips = append(ips, es.Namespace+"/"+a)
		}
	}
	owner := map[string]string{} // namespace/IP → workload key
	if len(ips) > 0 {
		for _, p := range krt.Fetch(ctx, c.podIPs, krt.FilterKeys(ips...)) {
			owner[p.key] = p.workload
			refs = append(refs, p.workload)
		}
	}
	out := sliceWorkloads{byRef: make(map[string]*model.WorkloadInstance, len(refs)), byIP: map[string]*model.WorkloadInstance{}}
	if len(refs) > 0 {
		for _, w := range krt.Fetch(ctx, c.workloads, krt.FilterKeys(refs...)) {
			out.byRef[w.ResourceName()] = &w
		}
	}
	for ipKey, wl := range owner {
		if w := out.byRef[wl]; w != nil {
			out.byIP[ipKey] = w
		}
	}
	return out
}

func podRefKey(ns string, ref *corev1.ObjectReference) string {
	if ref.Namespace != "" {
		ns = ref.Namespace
	}
	return ns + "/" + ref.Name
}

// template returns the metadata of the endpoint at addr: the template of
// the pod it runs in, or nil when no pod is known for it (a bare endpoint).
// ok is false when the targetRef names a pod not seen yet.
func (w sliceWorkloads) template(ns, addr string, ref *corev1.ObjectReference) (*model.IstioEndpoint, bool) {
	if ref != nil && ref.Kind == "Pod" {
		wl := w.byRef[podRefKey(ns, ref)]
		if wl == nil {
			return nil, false
		}
		return wl.Endpoint, true
	}
	if wl := w.byIP[ns+"/"+addr]; wl != nil {
		return wl.Endpoint, true
	}
	return nil, true
}

// bareTemplate is the metadata of an endpoint without a pod: cluster and
// network, no identity.
func (c *Controller) bareTemplate(network string) *model.IstioEndpoint {
	return &model.IstioEndpoint{
		Labels:   model.AugmentLabels(nil, c.opts.ClusterID, "", "", network),
		Network:  network,
		Locality: model.Locality{ClusterID: c.opts.ClusterID},
		TLSMode:  model.DisabledTLSModeLabel,
	}
}

// endpointHealth reads the slice conditions: ready or unset is Healthy,
// terminating is Terminating, anything else UnHealthy.
func endpointHealth(c discoveryv1.EndpointConditions) model.HealthStatus {
	switch {
	case c.Ready == nil || *c.Ready:
		return model.Healthy
	case c.Terminating != nil && *c.Terminating:
		return model.Terminating
	}
	return model.UnHealthy
}

// ownedByService reports whether the slice is owned by its Service (the
// EndpointSlice controller's slices are), so it goes with the Service.
func ownedByService(es *discoveryv1.EndpointSlice, svc string) bool {
	for _, r := range es.OwnerReferences {
		if r.Kind == "Service" && r.Name == svc {
			return true
		}
	}
	return false
}

// mergeEndpoints is the union of a service's slices (sorted by slice key):
// an address and port name seen in an earlier slice wins (an endpoint moving
// between slices shows in both for a moment).
func mergeEndpoints(infos []sliceInfo) []*model.IstioEndpoint {
	type epKey struct{ addr, port string }
	n := 0
	for _, s := range infos {
		n += len(s.endpoints)
	}
	out := make([]*model.IstioEndpoint, 0, n)
	seen := make(map[epKey]struct{}, n)
	for _, s := range infos {
		for _, ep := range s.endpoints {
			k := epKey{ep.FirstAddress(), ep.ServicePortName}
			if _, dup := seen[k]; dup {
				continue
			}
			seen[k] = struct{}{}
			out = append(out, ep)
		}
	}
	return out
}
