package kube

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/protocol"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// Services that select WorkloadEntries (Istio's
// PILOT_ENABLE_K8S_SELECT_WORKLOAD_ENTRIES). A Service of ClientSideLB
// resolution (it has a cluster IP) with a selector also has, in this
// registry's shard, an endpoint per service port for every WorkloadEntry
// of its namespace whose endpoint labels (the entry's labels plus the
// topology labels) the selector matches, after the endpoints of its
// slices. The entries come from another registry (SelectWorkloadEntries):
// the config cluster's ServiceEntry registry for the config cluster's
// registry, the remote cluster's WorkloadEntry-only registry for a remote
// one. Each endpoint is the entry's endpoint template (address, labels,
// tls mode, service account, network, locality, cluster, weight) with the
// port of the service port mapped as Istio maps it:
//
//   - a numeric targetPort: the entry's port named like the service port,
//     else the targetPort;
//   - a named targetPort: the entry's port of that name; an entry without
//     it has no endpoint for that port;
//   - no targetPort: the service port.

// workloadEntrySource is the attached collection of WorkloadEntries and
// its indexes.
type workloadEntrySource struct {
	byNamespace krt.Index[string, model.WorkloadInstance]
	byIP        krt.Index[string, model.WorkloadInstance]
	reg         krt.HandlerRegistration
}

// SelectWorkloadEntries makes the registry's Services select the
// WorkloadEntries of src (workload instances of kind WorkloadEntry whose
// address is an IP; unhealthy entries left out, as Istio drops them). Call
// it once, before the registry's inputs start; the registry is not synced
// until the initial entries were handled.
func (c *Controller) SelectWorkloadEntries(src krt.Collection[model.WorkloadInstance]) {
	s := &workloadEntrySource{
		byNamespace: krt.NewNamespaceIndex(src),
		byIP: krt.NewIndex(src, func(w model.WorkloadInstance) []string {
			if a := w.Endpoint.FirstAddress(); a != "" {
				return []string{a}
			}
			return nil
		}),
	}
	c.weMu.Lock()
	c.entries = s
	c.weMu.Unlock()
	reg := src.RegisterBatch(c.onWorkloadEntryEvents, true)
	c.weMu.Lock()
	s.reg = reg
	c.weMu.Unlock()
}

func (c *Controller) entrySource() *workloadEntrySource {
	c.weMu.Lock()
	defer c.weMu.Unlock()
	return c.entries
}

// entriesSynced reports whether the attached entries were handled.
func (c *Controller) entriesSynced() bool {
	c.weMu.Lock()
	defer c.weMu.Unlock()
	return c.entries == nil || (c.entries.reg != nil && c.entries.reg.HasSynced())
}

// onWorkloadEntryEvents recomputes the endpoints of every service that
// selects a changed entry, before or after the change.
func (c *Controller) onWorkloadEntryEvents(events []krt.Event[model.WorkloadInstance]) {
	var keys []string
	seen := map[string]bool{}
	for _, e := range events {
		for _, w := range e.Items() {
			for _, s := range c.servicesByNS.Lookup(w.Namespace) {
				if !seen[s.key] && selectsEntry(s, w) {
					seen[s.key] = true
					keys = append(keys, s.key)
				}
			}
		}
	}
	c.pushEndpoints(keys)
}

// selectsEntry reports whether a service selects an entry: a ClientSideLB,
// mesh-internal service of its namespace whose non-empty selector the
// entry's endpoint labels hold.
func selectsEntry(s serviceInfo, w model.WorkloadInstance) bool {
	svc := s.svc
	if svc.Resolution != model.ClientSideLB || svc.MeshExternal || len(svc.Attributes.LabelSelectors) == 0 ||
		w.Namespace != svc.Attributes.Namespace || w.Endpoint == nil {
		return false
	}
	return subset(svc.Attributes.LabelSelectors, w.Endpoint.Labels)
}

// entryEndpoints are the endpoints the entries give a service: per
// service port, the entries it selects, sorted by namespace/name.
func (c *Controller) entryEndpoints(s serviceInfo) []*model.IstioEndpoint {
	src := c.entrySource()
	if src == nil {
		return nil
	}
	var selected []model.WorkloadInstance
	for _, w := range src.byNamespace.Lookup(s.svc.Attributes.Namespace) {
		if selectsEntry(s, w) {
			selected = append(selected, w)
		}
	}
	if len(selected) == 0 {
		return nil
	}
	sort.Slice(selected, func(i, j int) bool { return selected[i].ResourceName() < selected[j].ResourceName() })
	var out []*model.IstioEndpoint
	for _, p := range s.svc.Ports {
		for _, w := range selected {
			if ep := entryEndpoint(w, p, s.targetPorts[p.Port]); ep != nil {
				out = append(out, ep)
			}
		}
	}
	return out
}

// entryEndpoint binds an entry to a service port (nil: the entry lacks
// the named target port).
func entryEndpoint(w model.WorkloadInstance, p *model.Port, tp intstr.IntOrString) *model.IstioEndpoint {
	port, ok := entryPort(w.PortMap, p, tp)
	if !ok {
		return nil
	}
	ep := w.Endpoint.ShallowCopy()
	ep.EndpointPort = port
	ep.ServicePortName = p.Name
	return ep
}

// entryPort maps a service port through an entry's ports, as Istio does:
// a numeric targetPort looks up the service port's name, a named one its
// own name (and is required).
func entryPort(ports map[string]uint32, p *model.Port, tp intstr.IntOrString) (uint32, bool) {
	if tp.Type == intstr.Int && tp.IntVal > 0 {
		if v := ports[p.Name]; v != 0 {
			return v, true
		}
		return uint32(tp.IntVal), true
	}
	name := ""
	if tp.Type == intstr.String {
		name = tp.StrVal
	}
	if name == "" {
		return uint32(p.Port), true
	}
	if v := ports[name]; v != 0 {
		return v, true
	}
	return 0, false
}

// pushEndpoints sends the endpoints of each service (namespace/name): its
// slices', then its entries'. Pushes are serialised and read the current
// state, so the last one sent for a service reflects its latest slices and
// entries whichever handler sends it. Headless services (whose endpoint
// changes need a full push) are returned.
func (c *Controller) pushEndpoints(svcKeys []string) map[model.ConfigKey]struct{} {
	c.edsMu.Lock()
	defer c.edsMu.Unlock()
	headless := map[model.ConfigKey]struct{}{}
	for _, svcKey := range svcKeys {
		ns, name, _ := cutKey(svcKey)
		hostname := ServiceHostname(name, ns, c.opts.DomainSuffix)
		eps := mergeEndpoints(c.slicesByService.Lookup(svcKey))
		s := c.services.GetKey(svcKey)
		if s != nil {
			fromEntries := c.entryEndpoints(*s)
			if len(fromEntries) > 0 {
				eps = append(eps, fromEntries...)
				c.entryServices[svcKey] = true
			} else {
				delete(c.entryServices, svcKey)
			}
		}
		c.opts.XDSUpdater.EDSUpdate(c.shard, hostname, ns, eps)
		if s != nil && s.headless() && !s.svc.Attributes.ExportTo.IsNone() {
			headless[model.ServiceConfigKey(hostname, ns)] = struct{}{}
		}
	}
	return headless
}

// serviceEntryPushes lists the changed services whose endpoints come (or
// came) partly from entries: their endpoints are sent again, since the
// selector or ports may have changed. A deleted service's shard goes with
// its SvcUpdate.
func (c *Controller) serviceEntryPushes(events []krt.Event[serviceInfo]) []string {
	if c.entrySource() == nil {
		return nil
	}
	var keys []string
	for _, e := range events {
		cur := e.Latest()
		if e.New == nil {
			c.edsMu.Lock()
			delete(c.entryServices, cur.key)
			c.edsMu.Unlock()
			continue
		}
		c.edsMu.Lock()
		had := c.entryServices[cur.key]
		c.edsMu.Unlock()
		if had || len(c.entryEndpoints(*e.New)) > 0 {
			keys = append(keys, cur.key)
		}
	}
	return keys
}

// proxyEntryTargets are the service targets of the entry with the proxy's
// first IP (entryForProxy), as Istio looks up a WorkloadEntry before
// pods; nil when there is none. UDP ports are left out.
func (c *Controller) proxyEntryTargets(q *model.ProxyQuery) ([]model.ServiceTarget, bool) {
	src := c.entrySource()
	if src == nil || len(q.IPAddresses) == 0 {
		return nil, false
	}
	found := entryForProxy(src.byIP.Lookup(q.IPAddresses[0]), q)
	if found == nil {
		return nil, false
	}
	w := *found
	out := []model.ServiceTarget{}
	for _, s := range c.servicesByNS.Lookup(w.Namespace) {
		if !selectsEntry(s, w) {
			continue
		}
		for _, p := range s.svc.Ports {
			if p.Protocol == protocol.UDP {
				continue
			}
			if ep := entryEndpoint(w, p, s.targetPorts[p.Port]); ep != nil {
				out = append(out, model.ServiceTarget{Service: s.svc,
					Port: model.ServiceInstancePort{Port: p, TargetPort: ep.EndpointPort}})
			}
		}
	}
	return out, true
}

// entryForProxy picks the proxy's entry among those with its IP, as
// Istio's GetInstanceForProxy: the only one; else, in namespace/name order,
// the one its ID names ("<name>.<namespace>", the namespace being the
// proxy's); else the first of the proxy's namespace; else the first. Nil
// when there is none.
func entryForProxy(found []model.WorkloadInstance, q *model.ProxyQuery) *model.WorkloadInstance {
	if len(found) == 0 {
		return nil
	}
	sort.Slice(found, func(i, j int) bool { return found[i].ResourceName() < found[j].ResourceName() })
	if len(found) == 1 {
		return &found[0]
	}
	if parts := strings.Split(q.ID, "."); len(parts) == 2 && parts[1] == q.Namespace {
		for i := range found {
			if found[i].Name == parts[0] && found[i].Namespace == parts[1] {
				return &found[i]
			}
		}
	}
	for i := range found {
		if found[i].Namespace == q.Namespace {
			return &found[i]
		}
	}
	return &found[0]
}
