package aggregate

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/diag"
)

// Registry is one registry the aggregate joins.
type Registry interface {
	model.ServiceDiscovery
	// Provider is the kind of registry (Kubernetes, External).
	Provider() model.ProviderID
	// Cluster is the cluster the registry serves.
	Cluster() string
	// HasSynced reports whether the initial state was read.
	HasSynced() bool
}

// Controller is the joined view. Registries join and leave with their
// clusters (AddRegistry, DeleteRegistry); every read sees one set of
// them.
type Controller struct {
	mu         sync.RWMutex
	registries []Registry // immutable: replaced on change
}

var _ model.ServiceDiscovery = (*Controller)(nil)

// New joins registries: Kubernetes ones first, the others after, each group
// in the order given.
func New(registries ...Registry) *Controller {
	regs := slices.Clone(registries)
	sort.SliceStable(regs, func(i, j int) bool {
		return regs[i].Provider() == model.Kubernetes && regs[j].Provider() != model.Kubernetes
	})
	return &Controller{registries: regs}
}

// AddRegistry joins r after the registries of its kind (a remote
// cluster's Kubernetes registry after the local one, before the
// ServiceEntry registry).
func (c *Controller) AddRegistry(r Registry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	regs := slices.Clone(c.registries)
	at := len(regs)
	if r.Provider() == model.Kubernetes {
		at = slices.IndexFunc(regs, func(x Registry) bool { return x.Provider() != model.Kubernetes })
		if at < 0 {
			at = len(regs)
		}
	}
	c.registries = slices.Insert(regs, at, r)
}

// DeleteRegistry removes r (the same value AddRegistry was given).
func (c *Controller) DeleteRegistry(r Registry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.registries = slices.DeleteFunc(slices.Clone(c.registries), func(x Registry) bool { return x == r })
}

// regs is the current set, read-only.
func (c *Controller) regs() []Registry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.registries
}

// Registries returns the joined registries in precedence order.
func (c *Controller) Registries() []Registry { return slices.Clone(c.regs()) }

// HasSynced reports whether every registry synced.
func (c *Controller) HasSynced() bool {
	for _, r := range c.regs() {
		if !r.HasSynced() {
			return false
		}
	}
	return true
}

// Services lists the services of every registry in precedence order. A
// Kubernetes Service present in several clusters is listed once, with the
// virtual IPs of every cluster and the service accounts of all.
func (c *Controller) Services() []*model.Service {
	var out []*model.Service
	kube := map[string]int{} // key → index in out
	for _, r := range c.regs() {
		for _, s := range r.Services() {
			if r.Provider() != model.Kubernetes {
				out = append(out, s)
				continue
			}
			i, dup := kube[s.Key()]
			if !dup {
				kube[s.Key()] = len(out)
				out = append(out, s)
				continue
			}
			out[i] = mergeService(out[i], s, r.Cluster())
		}
	}
	return out
}

// mergeService returns a copy of a, the service of a hostname in the
// clusters read so far, joined with b, its service in cluster: b's
// virtual IPs in that cluster (unless a has some there) and b's service
// accounts after a's, without duplicates, as Istio joins a Service of
// several clusters.
func mergeService(a, b *model.Service, cluster string) *model.Service {
	out := a.ShallowCopy()
	if len(a.ClusterVIPs.Addresses[cluster]) == 0 && len(b.ClusterVIPs.Addresses[cluster]) > 0 {
		vips := make(map[string][]string, len(a.ClusterVIPs.Addresses)+1)
		for k, v := range a.ClusterVIPs.Addresses {
			vips[k] = v
		}
		vips[cluster] = b.ClusterVIPs.Addresses[cluster]
		out.ClusterVIPs = model.AddressMap{Addresses: vips}
	}
	if len(b.ServiceAccounts) > 0 {
		sas := slices.Clip(a.ServiceAccounts)
		for _, sa := range b.ServiceAccounts {
			if !slices.Contains(sas, sa) {
				sas = append(sas, sa)
			}
		}
		out.ServiceAccounts = sas
	}
	return out
}

// GetService returns the service of hostname: a non-Kubernetes
// registry's as the first registry having it gives it, a Kubernetes
// Service joined across the clusters that have it.
func (c *Controller) GetService(hostname string) *model.Service {
	var out *model.Service
	for _, r := range c.regs() {
		s := r.GetService(hostname)
		switch {
		case s == nil:
		case r.Provider() != model.Kubernetes:
			if out == nil {
				return s
			}
			return out
		case out == nil:
			out = s
		default:
			out = mergeService(out, s, r.Cluster())
		}
	}
	return out
}

// GetServiceInNamespace returns the service a namespace's hostname names:
// a Kubernetes Service wins over a ServiceEntry, then the oldest.
func (c *Controller) GetServiceInNamespace(hostname, namespace string) *model.Service {
	var best *model.Service
	for _, s := range c.Services() {
		if s.Hostname != hostname || s.Attributes.Namespace != namespace {
			continue
		}
		if best == nil || precedes(s, best) {
			best = s
		}
	}
	return best
}

func precedes(a, b *model.Service) bool {
	ak, bk := a.Attributes.ServiceRegistry == model.Kubernetes, b.Attributes.ServiceRegistry == model.Kubernetes
	if ak != bk {
		return ak
	}
	return a.CreationTime.Before(b.CreationTime)
}

// NamespaceServices lists the services of one namespace.
func (c *Controller) NamespaceServices(namespace string) []*model.Service {
	var out []*model.Service
	for _, s := range c.Services() {
		if s.Attributes.Namespace == namespace {
			out = append(out, s)
		}
	}
	return out
}

// GetProxyServiceTargets joins the answers of the registries, in order, as
// Istio's aggregate does: of the Kubernetes registries only the proxy's
// cluster's when it names one, the others always.
func (c *Controller) GetProxyServiceTargets(q *model.ProxyQuery) []model.ServiceTarget {
	var out []model.ServiceTarget
	for _, r := range c.regs() {
		// the Kubernetes registries of other clusters than the proxy's
		// are not asked; the others (ServiceEntries) always are
		if q != nil && q.ClusterID != "" && r.Provider() == model.Kubernetes && q.ClusterID != r.Cluster() {
			continue
		}
		out = append(out, r.GetProxyServiceTargets(q)...)
	}
	return out
}

// Conflicts lists the ServiceEntry hosts that are also a Kubernetes
// Service's hostname, for /debug/warningz.
func (c *Controller) Conflicts() []diag.Problem {
	kube := map[string][]*model.Service{}
	var others []*model.Service
	for _, s := range c.Services() {
		if s.Attributes.ServiceRegistry == model.Kubernetes {
			kube[s.Hostname] = append(kube[s.Hostname], s)
		} else {
			others = append(others, s)
		}
	}
	var out []diag.Problem
	for _, s := range others {
		for _, k := range kube[s.Hostname] {
			obj := fmt.Sprintf("ServiceEntry %s/%s", s.Attributes.Namespace, s.Attributes.ObjectName)
			msg := fmt.Sprintf("host %s is also Kubernetes Service %s/%s; in namespace %s the Kubernetes Service "+
				"takes precedence and the endpoints of both are merged", s.Hostname, k.Attributes.Namespace, k.Attributes.Name,
				k.Attributes.Namespace)
			if k.Attributes.Namespace != s.Attributes.Namespace {
				msg = fmt.Sprintf("host %s is also Kubernetes Service %s/%s; each proxy uses the one visible to it, "+
					"the oldest when both are", s.Hostname, k.Attributes.Namespace, k.Attributes.Name)
			}
			out = append(out, diag.Problem{Severity: diag.Warning, Source: "serviceregistry", Subject: "host " + s.Hostname,
				Object: obj, Field: "spec.hosts", Message: msg})
		}
	}
	return out
}

// GetProxyWorkloadLabels asks the registries of the proxy's cluster (all,
// when it names none), in order, for its workload's labels: the first that
// knows the workload answers.
func (c *Controller) GetProxyWorkloadLabels(proxy *model.Proxy) map[string]string {
	cluster := proxy.ClusterID()
	for _, r := range c.regs() {
		l, ok := r.(model.WorkloadLabeler)
		if !ok || (cluster != "" && cluster != r.Cluster()) {
			continue
		}
		if labels := l.GetProxyWorkloadLabels(proxy); labels != nil {
			return labels
		}
	}
	return nil
}

var _ model.WorkloadLabeler = (*Controller)(nil)
