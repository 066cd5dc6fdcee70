package serviceentry

import (
	"sync"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/kube/krt"
)

// WorkloadEntryInstances are the registry's WorkloadEntries as other
// registries select them (Kubernetes Services, ServiceEntries of another
// registry): the valid entries whose address is an IP, without the
// unhealthy ones (Istio drops an entry whose health check failed before
// anything sees it). Their endpoint template carries this registry's
// cluster, the entry's network (the NetworkFor label when it names none)
// and locality, its service account and tls mode. The collection lives as
// long as the registry.
func (c *Controller) WorkloadEntryInstances() krt.Collection[model.WorkloadInstance] {
	c.instancesOnce.Do(func() {
		c.instances = krt.NewCollection(c.workloadEntries, func(_ krt.HandlerContext, w weInfo) *model.WorkloadInstance {
			if !w.valid || w.wi.DNSServiceEntryOnly || w.wi.Endpoint == nil || w.wi.Endpoint.HealthStatus == model.UnHealthy {
				return nil
			}
			wi := w.wi
			return &wi
		}, c.krtOpts("serviceentry/workload-entry-instances")...)
	})
	return c.instances
}

// externalWorkload is a workload of another cluster's registry that
// ServiceEntries of this one may select (a remote cluster's
// WorkloadEntry), keyed by cluster.
type externalWorkload struct {
	cluster string
	wi      model.WorkloadInstance
}

func (e externalWorkload) ResourceName() string         { return e.cluster + "/" + e.wi.ResourceName() }
func (e externalWorkload) GetNamespace() string         { return e.wi.Namespace }
func (e externalWorkload) GetLabels() map[string]string { return e.wi.Labels }
func (e externalWorkload) Equals(o externalWorkload) bool {
	return e.cluster == o.cluster && e.wi.Equals(o.wi)
}

// externalSources are the attached collections, by cluster.
type externalSources struct {
	mu   sync.Mutex
	regs map[string]krt.HandlerRegistration
}

// AddExternalWorkloads lets the registry's ServiceEntries select the
// workloads of src, the WorkloadEntries of cluster (Istio's
// ExternalWorkloads, fed by a remote cluster's WorkloadEntry registry).
// They keep the cluster and network their registry gave them. A second
// call for the cluster replaces the first; the returned func detaches the
// cluster's workloads (its endpoints leave the ServiceEntries).
func (c *Controller) AddExternalWorkloads(cluster string, src krt.Collection[model.WorkloadInstance]) (remove func()) {
	c.external.mu.Lock()
	if old := c.external.regs[cluster]; old != nil {
		old.UnregisterHandler()
	}
	c.external.mu.Unlock()
	var mu sync.Mutex
	removed, first := false, true
	reg := src.RegisterBatch(func(events []krt.Event[model.WorkloadInstance]) {
		mu.Lock()
		defer mu.Unlock()
		if removed {
			return
		}
		if first {
			// the initial state: what an earlier source of the cluster
			// held and this one does not is gone
			first = false
			c.dropExternal(cluster, events)
		}
		for _, e := range events {
			if e.New == nil {
				c.externalWorkloads.Delete(externalWorkload{cluster: cluster, wi: *e.Old}.ResourceName())
				continue
			}
			c.externalWorkloads.Set(externalWorkload{cluster: cluster, wi: *e.New})
		}
	}, true)
	c.external.mu.Lock()
	c.external.regs[cluster] = reg
	c.external.mu.Unlock()
	return func() {
		reg.UnregisterHandler()
		mu.Lock()
		removed = true
		mu.Unlock()
		c.external.mu.Lock()
		current := c.external.regs[cluster] == reg
		if current {
			delete(c.external.regs, cluster)
		}
		c.external.mu.Unlock()
		if !current {
			return // replaced: the new source holds the cluster's keys
		}
		c.dropExternal(cluster, nil)
	}
}

// dropExternal deletes the workloads of cluster that keep (an initial
// batch) does not hold.
func (c *Controller) dropExternal(cluster string, keep []krt.Event[model.WorkloadInstance]) {
	held := make(map[string]bool, len(keep))
	for _, e := range keep {
		held[externalWorkload{cluster: cluster, wi: e.Latest()}.ResourceName()] = true
	}
	for _, e := range c.externalWorkloads.List() {
		if e.cluster == cluster && !held[e.ResourceName()] {
			c.externalWorkloads.Delete(e.ResourceName())
		}
	}
}

// ClearReports withdraws what the registry reported of its WorkloadEntries
// (its cluster is gone).
func (c *Controller) ClearReports() {
	for _, w := range c.workloadEntries.List() {
		c.report("WorkloadEntry", w.ResourceName(), false, nil)
	}
}

// selectedExternal fetches the external workloads of a namespace that a
// selector selects.
func (c *Controller) selectedExternal(ctx krt.HandlerContext, ns string, sel map[string]string) []model.WorkloadInstance {
	var out []model.WorkloadInstance
	for _, e := range krt.Fetch(ctx, c.externalWorkloads, krt.FilterNamespace(ns), krt.FilterLabel(sel)) {
		out = append(out, e.wi)
	}
	return out
}
