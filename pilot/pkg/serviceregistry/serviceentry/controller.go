package serviceentry

import (
	"slices"
	"sync"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/log"
)

var scope = log.RegisterScope("serviceentry", "ServiceEntry service registry")

// Options configure the registry. Read once at construction.
type Options struct {
	// ClusterID is the cluster the endpoints are attributed to
	// ("Kubernetes" by default).
	ClusterID string
	// TrustDomain of SPIFFE identities ("cluster.local" by default).
	TrustDomain string
	// DefaultNetwork is the network of workloads whose entry names none.
	DefaultNetwork string
	// NetworkFor, when set, gives the topology.istio.io/network label of
	// a WorkloadEntry (or inline endpoint) that names no network and has
	// no such label: Istio's WithNetworkIDCb, which it sets only for the
	// WorkloadEntries it reads from a remote cluster (the kube registry's
	// Network of that cluster). The endpoint's network stays the entry's
	// own, as in Istio.
	NetworkFor func(ip string, labels map[string]string) string
	// XDSUpdater receives every change (required).
	XDSUpdater model.XDSUpdater
	// HashAllocate is PILOT_ENABLE_IP_AUTOALLOCATE=false: services
	// without an address get one from their key (hashalloc.go), Istio's
	// scheme without its allocator; with the allocator they get the
	// addresses it wrote into the entries' status.
	HashAllocate bool
	// Workloads are the pods a workloadSelector may select (the Kubernetes
	// registry's Workloads); nil without a cluster.
	Workloads krt.Collection[model.WorkloadInstance]
	// Problems receives bad-input reports (may be nil).
	Problems *diag.Board
	// ReportCluster names the cluster in the objects it reports (a remote
	// cluster's WorkloadEntry registry, whose objects may share names with
	// the config cluster's).
	ReportCluster bool
	// Krt registers the collections for /debug/krtz (may be nil).
	Krt *krt.DebugHandler
	// Stop ends the registry's goroutines.
	Stop <-chan struct{}
}

type settings struct {
	TrustDomain    string
	DefaultNetwork string
}

// Controller is the ServiceEntry registry.
type Controller struct {
	opts  Options
	shard model.ShardKey

	settings        krt.StaticSingleton[settings]
	entries         krt.Collection[config.Config]
	groups          krt.Collection[config.Config]
	rawWorkloads    krt.Collection[config.Config]
	workloadEntries krt.Collection[weInfo]
	serviceEntries  krt.Collection[seInfo]
	byHost          krt.Index[string, seInfo]
	byAddress       krt.Index[string, seInfo]

	// instances are the WorkloadEntries other registries select, built on
	// first use (external.go)
	instancesOnce sync.Once
	instances     krt.Collection[model.WorkloadInstance]
	// externalWorkloads are other clusters' WorkloadEntries the
	// ServiceEntries select, fed by the sources in external
	externalWorkloads krt.StaticCollection[externalWorkload]
	external          externalSources

	// known is owned by the service entry handler: the namespace/host
	// pairs it announced.
	known         map[string]bool
	registrations []krt.HandlerRegistration
}

var _ model.ServiceDiscovery = (*Controller)(nil)

// NewController builds the registry on the ServiceEntries, WorkloadEntries
// and WorkloadGroups of store. It reads the store's collections when it
// exposes them, else follows its events (then it must be built before the
// store runs).
func NewController(store model.ConfigStoreController, opts Options) *Controller {
	if opts.ClusterID == "" {
		opts.ClusterID = "Kubernetes"
	}
	if opts.TrustDomain == "" {
		opts.TrustDomain = "cluster.local"
	}
	c := &Controller{opts: opts, shard: model.NewShardKey(model.External, opts.ClusterID), known: map[string]bool{}}
	c.settings = krt.NewStatic(&settings{TrustDomain: opts.TrustDomain, DefaultNetwork: opts.DefaultNetwork},
		c.krtOpts("serviceentry/settings")...)
	c.entries = kindCollection(store, gvk.ServiceEntry, c.krtOpts("serviceentry/store/ServiceEntry"), opts.Stop)
	c.externalWorkloads = krt.NewStaticCollection[externalWorkload](nil, c.krtOpts("serviceentry/external-workloads")...)
	c.external.regs = map[string]krt.HandlerRegistration{}
	c.rawWorkloads = kindCollection(store, gvk.WorkloadEntry, c.krtOpts("serviceentry/store/WorkloadEntry"), opts.Stop)
	c.groups = kindCollection(store, gvk.WorkloadGroup, c.krtOpts("serviceentry/store/WorkloadGroup"), opts.Stop)
	c.workloadEntries = krt.NewCollection(c.rawWorkloads, c.buildWorkloadEntry, c.krtOpts("serviceentry/workload-entries")...)
	c.serviceEntries = krt.NewCollection(c.entries, c.buildServiceEntry, c.krtOpts("serviceentry/service-entries")...)
	c.byHost = krt.NewIndex(c.serviceEntries, func(s seInfo) []string {
		out := make([]string, len(s.services))
		for i, svc := range s.services {
			out[i] = s.namespace + "/" + svc.Hostname
		}
		return out
	})
	c.byAddress = krt.NewIndex(c.serviceEntries, func(s seInfo) []string {
		var out []string
		for _, eps := range s.endpoints {
			for _, ep := range eps {
				if a := ep.FirstAddress(); !slices.Contains(out, a) {
					out = append(out, a)
				}
			}
		}
		return out
	})
	c.registrations = append(c.registrations,
		c.serviceEntries.RegisterBatch(c.onServiceEntryEvents, true),
		c.workloadEntries.RegisterBatch(c.onWorkloadEntryEvents, true))
	return c
}

func (c *Controller) krtOpts(name string) []krt.CollectionOption {
	o := []krt.CollectionOption{krt.WithName(name)}
	if c.opts.Stop != nil {
		o = append(o, krt.WithStop(c.opts.Stop))
	}
	if c.opts.Krt != nil {
		o = append(o, krt.WithDebugging(c.opts.Krt))
	}
	return o
}

// SetTrustDomain changes the trust domain of the identities rendered.
func (c *Controller) SetTrustDomain(td string) {
	if td == "" {
		td = "cluster.local"
	}
	cur := *c.settings.Get()
	cur.TrustDomain = td
	c.settings.Set(&cur)
}

// Provider is External.
func (c *Controller) Provider() model.ProviderID { return model.External }

// Cluster is the cluster the endpoints are attributed to.
func (c *Controller) Cluster() string { return c.opts.ClusterID }

// HasSynced reports whether the initial state was read and handed to the
// XDSUpdater.
func (c *Controller) HasSynced() bool {
	if !krt.AllSynced(c.entries, c.rawWorkloads, c.groups, c.workloadEntries, c.serviceEntries) {
		return false
	}
	for _, r := range c.registrations {
		if !r.HasSynced() {
			return false
		}
	}
	return true
}

// Services lists one service per namespace and host: when several
// ServiceEntries of a namespace declare a host, the oldest wins (then the
// lowest name).
func (c *Controller) Services() []*model.Service {
	infos := c.serviceEntries.List()
	winners := map[string]*model.Service{}
	var order []string
	for _, s := range infos {
		for _, svc := range s.services {
			k := svc.Key()
			cur, ok := winners[k]
			if !ok {
				order = append(order, k)
			}
			if !ok || svc.CreationTime.Before(cur.CreationTime) {
				winners[k] = svc
			}
		}
	}
	out := make([]*model.Service, len(order))
	for i, k := range order {
		out[i] = winners[k]
	}
	if c.opts.HashAllocate {
		return hashAllocate(out)
	}
	return out
}

// GetService returns the oldest service with this host, in any namespace.
func (c *Controller) GetService(hostname string) *model.Service {
	var best *model.Service
	for _, svc := range c.Services() {
		if svc.Hostname == hostname && (best == nil || svc.CreationTime.Before(best.CreationTime)) {
			best = svc
		}
	}
	return best
}

// kindCollection returns the collection of a kind of store: the store's own
// when it exposes collections, else one fed by its events (empty when the
// store lacks the kind).
func kindCollection(store model.ConfigStoreController, g config.GroupVersionKind, opts []krt.CollectionOption,
	stop <-chan struct{},
) krt.Collection[config.Config] {
	if cs, ok := store.(interface {
		Collection(config.GroupVersionKind) krt.Collection[config.Config]
	}); ok {
		if col := cs.Collection(g); col != nil {
			return col
		}
	}
	if _, ok := store.Schemas().FindByGroupVersionKind(g); !ok {
		scope.Debugf("the config store has no %s: none are read", g.Kind)
		return krt.NewStaticCollection[config.Config](nil, opts...)
	}
	sc := krt.NewStaticCollection(store.List(g, ""), append(opts, krt.Unsynced())...)
	store.RegisterEventHandler(g, func(_ config.Config, cur config.Config, ev model.Event) {
		if ev == model.EventDelete {
			sc.Delete(krtKey(cur))
			return
		}
		sc.Set(cur)
	})
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for !store.HasSynced() {
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
		sc.MarkSynced()
	}()
	return sc
}

func krtKey(c config.Config) string {
	if c.Namespace == "" {
		return c.Name
	}
	return c.Namespace + "/" + c.Name
}
