package bootstrap

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/config/kube/crdclient"
	"github.com/meshplane/istiod/pilot/pkg/model"
	kuberegistry "github.com/meshplane/istiod/pilot/pkg/serviceregistry/kube"
	"github.com/meshplane/istiod/pilot/pkg/serviceregistry/serviceentry"
	"github.com/meshplane/istiod/pkg/config/schema/collection"
	"github.com/meshplane/istiod/pkg/config/schema/collections"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/pkg/kube/krt"
	"github.com/meshplane/istiod/pkg/kube/multicluster"
	"github.com/meshplane/istiod/pkg/kube/namespace"
)

// MulticlusterOptions are the remote clusters' settings (Istio's
// environment variables, read once by the command).
type MulticlusterOptions struct {
	// SyncTimeout is PILOT_REMOTE_CLUSTER_TIMEOUT (default 30s; 0: a
	// remote cluster holds up readiness until it synced).
	SyncTimeout time.Duration
	// InsecureKubeconfigOptions is
	// PILOT_INSECURE_MULTICLUSTER_KUBECONFIG_OPTIONS (comma separated).
	InsecureKubeconfigOptions []string
	// BuildClient, when set, makes a remote cluster's client of its
	// kubeconfig instead of a real client (benchmarks and tests that
	// stand up many clusters in process).
	BuildClient func(kubeconfig []byte, clusterID string) (kube.Client, error)
	// ExternalIstiod is EXTERNAL_ISTIOD: istiod writes in the remote
	// clusters whose istiod namespace names its cluster
	// (multicluster_remote.go).
	ExternalIstiod bool
	// KubeconfigPath is PILOT_MULTICLUSTER_KUBECONFIG_PATH: the remote
	// clusters are read from the kubeconfig files of this directory
	// instead of remote secrets.
	KubeconfigPath string
	// LocalClusterSecretWatcher is LOCAL_CLUSTER_SECRET_WATCHER: with
	// ExternalIstiod (and no KubeconfigPath, which wins, as in Istio
	// 1.31), the remote secrets are read in istiod's namespace of the
	// cluster istiod runs in (InCluster) instead of the config cluster
	// (--kubeconfig).
	LocalClusterSecretWatcher bool
	// InCluster locates the cluster istiod runs in
	// (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT; the service
	// account's token and CA files, at kubelet's paths unless set).
	InCluster kube.InCluster
	// SelectWorkloadEntries is PILOT_ENABLE_K8S_SELECT_WORKLOAD_ENTRIES
	// (default true): Kubernetes Services select the WorkloadEntries of
	// their namespace.
	SelectWorkloadEntries bool
	// CrossClusterWorkloadEntries is
	// PILOT_ENABLE_CROSS_CLUSTER_WORKLOAD_ENTRY (default true): with
	// SelectWorkloadEntries, the WorkloadEntries of each remote cluster
	// are read there, selected by that cluster's Services and by the
	// local ServiceEntries.
	CrossClusterWorkloadEntries bool
	// ResolveHostnameGateways is RESOLVE_HOSTNAME_GATEWAYS (default true):
	// network gateways given by hostname are resolved by istiod; false
	// leaves them out of EDS, as Istio does.
	ResolveHostnameGateways bool
	// DiscoverGatewayAPINetworks is PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API
	// (default true): Gateway API gateways labelled with a network are
	// that network's gateways.
	DiscoverGatewayAPINetworks bool
}

// DefaultMulticlusterOptions are Istio's defaults.
func DefaultMulticlusterOptions() MulticlusterOptions {
	return MulticlusterOptions{SyncTimeout: multicluster.DefaultSyncTimeout, SelectWorkloadEntries: true,
		CrossClusterWorkloadEntries: true, ResolveHostnameGateways: true, DiscoverGatewayAPINetworks: true}
}

// MulticlusterFromEnv reads the options' variables with getenv; unset
// ones keep their value, one that does not parse is an error naming it.
func MulticlusterFromEnv(getenv func(string) string, o *MulticlusterOptions) error {
	if v := getenv("PILOT_REMOTE_CLUSTER_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("PILOT_REMOTE_CLUSTER_TIMEOUT=%q: want a duration, 0 or more", v)
		}
		o.SyncTimeout = d
	}
	if v := getenv("EXTERNAL_ISTIOD"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("EXTERNAL_ISTIOD=%q: want a boolean", v)
		}
		o.ExternalIstiod = b
	}
	for _, b := range []struct {
		name string
		dst  *bool
	}{{"PILOT_ENABLE_K8S_SELECT_WORKLOAD_ENTRIES", &o.SelectWorkloadEntries},
		{"PILOT_ENABLE_CROSS_CLUSTER_WORKLOAD_ENTRY", &o.CrossClusterWorkloadEntries},
		{"LOCAL_CLUSTER_SECRET_WATCHER", &o.LocalClusterSecretWatcher},
		{"RESOLVE_HOSTNAME_GATEWAYS", &o.ResolveHostnameGateways},
		{"PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API", &o.DiscoverGatewayAPINetworks}} {
		if v := getenv(b.name); v != "" {
			p, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%s=%q: want a boolean", b.name, v)
			}
			*b.dst = p
		}
	}
	if v := getenv("PILOT_MULTICLUSTER_KUBECONFIG_PATH"); v != "" {
		o.KubeconfigPath = v
	}
	o.InCluster.Host, o.InCluster.Port = getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if v := getenv("PILOT_INSECURE_MULTICLUSTER_KUBECONFIG_OPTIONS"); v != "" {
		o.InsecureKubeconfigOptions = nil
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				o.InsecureKubeconfigOptions = append(o.InsecureKubeconfigOptions, s)
			}
		}
	}
	return nil
}

// initMulticluster reads remote secrets (istio/multiCluster=true in
// istiod's namespace, as Istio 1.31 reads them whatever
// --clusterRegistriesNamespace says) when there is a cluster: each remote
// cluster gets a Kubernetes registry of its own, joined by the aggregate
// beside the local one (docs/multicluster.md). With
// LOCAL_CLUSTER_SECRET_WATCHER and EXTERNAL_ISTIOD the secrets are read
// in the cluster istiod runs in; that cluster's client failing to build
// stops istiod at start (Istio's controller is then missing, and istiod
// crashes).
func (s *Server) initMulticluster() error {
	if s.kubeClient == nil || s.services == nil || s.services.kube == nil {
		return nil
	}
	o := s.args.Multicluster
	clientOpts := kube.Options{QPS: s.args.KubernetesAPIQPS, Burst: s.args.KubernetesAPIBurst}
	secrets, own, err := s.secretsClient(clientOpts)
	if err != nil {
		return err
	}
	ctl := multicluster.NewController(multicluster.Options{Client: secrets, CloseClient: own, ClusterID: s.args.ClusterID, Namespace: s.args.Namespace,
		KubeconfigDir: o.KubeconfigPath, InsecureOptions: o.InsecureKubeconfigOptions, SyncTimeout: o.SyncTimeout, Problems: s.problems, BuildClient: o.BuildClient,
		ClientOptions: clientOpts})
	filters := newRemoteFilters(s)
	ctl.AddHandler(&remoteRegistries{s: s, filters: filters, byCluster: map[*multicluster.Cluster]*remoteRegistry{}})
	ctl.AddHandler(&remoteWrites{s: s, filters: filters, byCluster: map[*multicluster.Cluster]*remoteWriter{}})
	s.multicluster = ctl
	return nil
}

// secretsClient is the client the remote secrets are read with: the
// config cluster's, or, with LOCAL_CLUSTER_SECRET_WATCHER and
// EXTERNAL_ISTIOD (and no kubeconfig directory), one of its own on the
// cluster istiod runs in (its in-cluster config, with the config
// client's rate limits, as Istio's ConfigOverrides), which the
// controller closes when it stops (own).
func (s *Server) secretsClient(opts kube.Options) (c kube.Client, own bool, err error) {
	o := s.args.Multicluster
	if !o.LocalClusterSecretWatcher || !o.ExternalIstiod || o.KubeconfigPath != "" {
		return s.kubeClient, false, nil
	}
	cfg, err := o.InCluster.Config()
	if err != nil {
		return nil, false, fmt.Errorf("LOCAL_CLUSTER_SECRET_WATCHER: the in-cluster config of the cluster istiod runs in: %v", err)
	}
	if c, err = kube.NewClient(cfg, opts); err != nil {
		return nil, false, fmt.Errorf("LOCAL_CLUSTER_SECRET_WATCHER: a client of the cluster istiod runs in: %v", err)
	}
	scope.Infof("remote secrets are read in namespace %s of the cluster istiod runs in (%s), not the config cluster", s.args.Namespace, cfg.Host)
	return c, true, nil
}

// remoteRegistries keeps a Kubernetes registry per remote cluster in the
// aggregate.
type remoteRegistries struct {
	s         *Server
	filters   *remoteFilters
	mu        sync.Mutex
	byCluster map[*multicluster.Cluster]*remoteRegistry
}

// remoteRegistry is a remote cluster's registry in the aggregate: its
// sync does not hold up the aggregate's (the multicluster controller
// says when a remote cluster holds up readiness, and for how long).
type remoteRegistry struct {
	*kuberegistry.Controller
	// detachEntries detaches the cluster's WorkloadEntries from the local
	// ServiceEntries (nil: not read)
	detachEntries func()
}

func (remoteRegistry) HasSynced() bool { return true }

func (h *remoteRegistries) ClusterAdded(c *multicluster.Cluster) func() bool {
	s := h.s
	// its endpoints reach the proxies once it synced (syncGate)
	gate := newSyncGate(s.services.updater)
	// what is built on the cluster leaves /debug/krtz with it, also the
	// collections that do not stop with it
	dbg := s.krtDebug.Until(c.Stopped())
	opts := kuberegistry.Options{
		ClusterID:       c.ID,
		DomainSuffix:    s.args.Domain,
		TrustDomain:     s.mesh.Mesh().GetTrustDomain(),
		SystemNamespace: s.args.Namespace,
		MeshNetworks:    s.meshNetworks(),
		// PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API=false
		NoGatewayAPINetworks: !s.args.Multicluster.DiscoverGatewayAPINetworks,
		XDSUpdater:           gate,
		Problems:             s.problems,
		Krt:                  dbg,
		Stop:                 c.Stopped(),
	}
	// discoverySelectors select among the cluster's own namespaces
	df := h.filters.of(c)
	if df != nil {
		opts.NamespaceFilter = df
	}
	kr, err := kuberegistry.NewController(c.Client, opts)
	if err != nil {
		s.problems.Report("multicluster", "cluster "+c.ID, []diag.Problem{{Severity: diag.Error, Source: "multicluster",
			Object: "Secret " + c.SecretName, Field: "data." + c.ID, Message: fmt.Sprintf("cluster %s: %v", c.ID, err)}})
		return func() bool { return true }
	}
	go gate.openWhen(kr.HasSynced, c.Stopped())
	r := &remoteRegistry{Controller: kr}
	entriesSynced := func() bool { return true }
	if o := s.args.Multicluster; o.SelectWorkloadEntries && o.CrossClusterWorkloadEntries {
		r.detachEntries, entriesSynced = h.remoteWorkloadEntries(c, kr, df, dbg)
	}
	h.mu.Lock()
	h.byCluster[c] = r
	h.mu.Unlock()
	s.services.aggregate.AddRegistry(r)
	kr.SetMeshNetworks(s.meshNetworks()) // a change while it was built
	// synced once its endpoints went out: the registry it replaces (if
	// any) serves until then
	if df == nil {
		return func() bool { return gate.isOpen() && entriesSynced() }
	}
	return func() bool { return df.HasSynced() && gate.isOpen() && entriesSynced() }
}

// remoteWorkloadEntries reads the WorkloadEntries of a remote cluster
// with a store of that kind alone, as Istio's createWleConfigStore does:
// a WorkloadEntry-only ServiceEntry registry of the cluster (its ID, the
// network the cluster's registry gives an entry that names none) whose
// entries the cluster's Services select and the local ServiceEntries
// select. Without the CRD in the cluster there are none. It stops with
// the cluster; detach removes its entries from the local ServiceEntries.
// Its collections are listed on dbg, the cluster's.
func (h *remoteRegistries) remoteWorkloadEntries(c *multicluster.Cluster, kr *kuberegistry.Controller,
	df *namespace.DiscoveryFilter, dbg *krt.DebugHandler,
) (detach func(), synced func() bool) {
	s := h.s
	copts := crdclient.Options{Revision: s.args.Revision, DomainSuffix: s.args.Domain, Krt: dbg, Problems: s.problems}
	if df != nil {
		copts.NamespaceFilter = df
	}
	store, err := crdclient.New(c.Client, collection.NewSchemasBuilder().MustAdd(collections.WorkloadEntry).Build(), copts)
	if err != nil {
		scope.Errorf("cluster %s: WorkloadEntries are not read: %v", c.ID, err)
		return nil, func() bool { return true }
	}
	wle := serviceentry.NewController(store, serviceentry.Options{
		ClusterID:     c.ID,
		TrustDomain:   s.mesh.Mesh().GetTrustDomain(),
		NetworkFor:    kr.Network,
		XDSUpdater:    s.services.updater,
		Problems:      s.problems,
		ReportCluster: true,
		Krt:           dbg,
		Stop:          c.Stopped(),
	})
	entries := wle.WorkloadEntryInstances()
	kr.SelectWorkloadEntries(entries)
	detachSE := s.services.serviceEntries.AddExternalWorkloads(c.ID, entries)
	detach = func() {
		detachSE()
		wle.ClearReports()
	}
	go store.Run(c.Stopped())
	return detach, func() bool { return wle.HasSynced() && entries.HasSynced() }
}

func (h *remoteRegistries) ClusterRemoved(c *multicluster.Cluster, replacement *multicluster.Cluster) {
	h.mu.Lock()
	r := h.byCluster[c]
	delete(h.byCluster, c)
	h.mu.Unlock()
	h.filters.drop(c)
	if r == nil {
		return
	}
	s := h.s
	keys := map[model.ConfigKey]struct{}{}
	for _, svc := range r.Services() {
		keys[model.ServiceConfigKey(svc.Hostname, svc.Attributes.Namespace)] = struct{}{}
	}
	hadGateways := len(r.NetworkGateways()) > 0
	s.services.aggregate.DeleteRegistry(r)
	if r.detachEntries != nil {
		r.detachEntries()
	}
	if replacement == nil {
		// the cluster's endpoints leave every proxy; with a replacement
		// the new client's registry has written the same shard
		s.services.updater.RemoveShard(model.NewShardKey(model.Kubernetes, c.ID))
	}
	s.problems.Clear("multicluster", "cluster "+c.ID)
	if replacement == nil && hadGateways {
		// its network gateways are gone: every proxy, as on any gateway change
		s.services.updater.ConfigUpdate(&model.PushRequest{Full: true, Forced: true, Reason: model.NewReasonStats(model.NetworksTrigger)})
		return
	}
	if len(keys) > 0 {
		s.services.updater.ConfigUpdate(&model.PushRequest{Full: true, ConfigsUpdated: keys, Reason: model.NewReasonStats(model.ServiceUpdate)})
	}
}
