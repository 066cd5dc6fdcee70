package multicluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/kube"
	"github.com/meshplane/istiod/pkg/log"
)

// SecretLabel marks a remote secret (value "true").
const SecretLabel = "istio/multiCluster"

// DefaultSyncTimeout is PILOT_REMOTE_CLUSTER_TIMEOUT's default.
const DefaultSyncTimeout = 30 * time.Second

var mcLog = log.RegisterScope("multicluster", "remote clusters from remote secrets")

// Handler builds components on remote clusters. Calls for one controller
// come one at a time.
type Handler interface {
	// ClusterAdded builds the handler's components on c, their informers
	// from c.Client (the controller starts them after every handler was
	// called) and their goroutines ending with c.Stopped(); it returns
	// whether they synced. c may replace a cluster of the same ID (new
	// credentials): that one goes on serving until ClusterRemoved.
	ClusterAdded(c *Cluster) (synced func() bool)
	// ClusterRemoved drops what the handler built on c, which stops;
	// replacement, when set, is the cluster of the same ID that serves
	// from now on (it synced, or will: nothing of the cluster's should be
	// withdrawn then).
	ClusterRemoved(c *Cluster, replacement *Cluster)
}

// Options configure a Controller.
type Options struct {
	// Client reads the remote secrets (the config cluster, or with
	// LOCAL_CLUSTER_SECRET_WATCHER the cluster istiod runs in).
	Client kube.Client
	// CloseClient: Client was built for the controller alone, and Run
	// closes it when it stops.
	CloseClient bool
	// ClusterID is the cluster istiod runs in: a secret naming it is
	// ignored.
	ClusterID string
	// Namespace holds the remote secrets (istiod's).
	Namespace string
	// KubeconfigDir is PILOT_MULTICLUSTER_KUBECONFIG_PATH: when set, the
	// clusters are read from the kubeconfig files under it instead of
	// remote secrets (kubeconfigdir.go).
	KubeconfigDir string
	// BuildClient makes a cluster's client of its kubeconfig; nil: the
	// kubeconfig is checked as untrusted (InsecureOptions) and a real
	// client built.
	BuildClient func(kubeconfig []byte, clusterID string) (kube.Client, error)
	// InsecureOptions are PILOT_INSECURE_MULTICLUSTER_KUBECONFIG_OPTIONS.
	InsecureOptions []string
	// ClientOptions tune the clients BuildClient's default makes (the
	// API rate limits of the local one).
	ClientOptions kube.Options
	// SyncTimeout: after it a syncing cluster no longer holds up
	// HasSynced (0: it always does).
	SyncTimeout time.Duration
	// Problems receives the secrets that cannot be used (nil: logged only).
	Problems *diag.Board
	// Retry is the backoff of a secret that failed (nil: 100ms doubling to
	// 5 minutes).
	Retry workqueue.TypedRateLimiter[string]
}

// Controller keeps one Cluster per remote secret key.
type Controller struct {
	opts     Options
	handlers []Handler
	// informer reads the remote secrets; files the kubeconfig directory
	// instead (one of them is nil)
	informer cache.SharedIndexInformer
	files    *kubeconfigDir
	queue    workqueue.TypedRateLimitingInterface[string]

	// hmu makes handler calls one at a time
	hmu sync.Mutex

	mu sync.Mutex
	// clusters by ID; bySecret: the IDs each secret configured
	clusters map[string]*Cluster
	bySecret map[string][]string
	// initial are the secrets present when the informer synced that have
	// not been processed yet; initialKnown is set once they are known
	initial      map[string]bool
	initialKnown bool
	// synced latches HasSynced: a cluster added later does not make
	// istiod unready (as in Istio, remote clusters hold up the start only)
	synced atomic.Bool
}

// NewController builds a controller; add handlers, then Run it.
func NewController(opts Options) *Controller {
	if opts.Retry == nil {
		opts.Retry = workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 5*time.Minute)
	}
	c := &Controller{opts: opts, clusters: map[string]*Cluster{}, bySecret: map[string][]string{}}
	if c.opts.BuildClient == nil {
		c.opts.BuildClient = func(kubeconfig []byte, _ string) (kube.Client, error) {
			cfg, err := restConfigFor(kubeconfig, opts.InsecureOptions)
			if err != nil {
				return nil, err
			}
			return kube.NewClient(cfg, opts.ClientOptions)
		}
	}
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(opts.Retry, workqueue.TypedRateLimitingQueueConfig[string]{Name: "multicluster-secrets"})
	managedClusters.WithLabelValues("local").Set(1)
	managedClusters.WithLabelValues("remote").Set(0)
	if opts.KubeconfigDir != "" {
		c.files = newKubeconfigDir(opts.KubeconfigDir, c.queue.Add)
		return c
	}
	secrets := opts.Client.Kube().CoreV1().Secrets(opts.Namespace)
	selector := SecretLabel + "=true"
	c.informer = cache.NewSharedIndexInformer(&cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return secrets.List(context.Background(), o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return secrets.Watch(context.Background(), o)
		},
	}, &corev1.Secret{}, 0, cache.Indexers{})
	enqueue := func(event string) func(obj any) {
		return func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				secretEvents.WithLabelValues(event).Inc()
				c.queue.Add(key)
			}
		}
	}
	_, _ = c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue("add"),
		UpdateFunc: func(_, obj any) { enqueue("update")(obj) },
		DeleteFunc: enqueue("delete"),
	})
	return c
}

// AddHandler registers h; call before Run.
func (c *Controller) AddHandler(h Handler) { c.handlers = append(c.handlers, h) }

// Run watches the secrets until stop, then stops every cluster.
func (c *Controller) Run(stop <-chan struct{}) {
	synced, keys := c.sourceSynced, c.sourceKeys
	if c.files != nil {
		go c.files.run(stop)
	} else {
		go c.informer.Run(stop)
	}
	go func() {
		if !cache.WaitForCacheSync(stop, synced) {
			return
		}
		c.mu.Lock()
		c.initial = map[string]bool{}
		for _, k := range keys() {
			c.initial[k] = true
		}
		c.initialKnown = true
		c.mu.Unlock()
		for c.processNext() {
		}
	}()
	go func() {
		<-stop
		c.queue.ShutDown()
		c.mu.Lock()
		all := make([]*Cluster, 0, len(c.clusters))
		for _, cl := range c.clusters {
			all = append(all, cl)
			if cl.replaces != nil {
				all = append(all, cl.replaces)
			}
		}
		c.mu.Unlock()
		for _, cl := range all {
			cl.shutdown()
		}
		if c.opts.CloseClient {
			c.opts.Client.Close()
		}
	}()
}

// HasSynced tells the secrets present at start were processed and each of
// their clusters synced or timed out; once true, it stays true.
func (c *Controller) HasSynced() bool {
	if c.synced.Load() {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.initialKnown || len(c.initial) > 0 {
		return false
	}
	for _, cl := range c.clusters {
		if !cl.isReady() {
			return false
		}
	}
	c.synced.Store(true)
	return true
}

// Info is a cluster as /debug/clusterz lists it.
type Info struct {
	ID, SecretName, SyncStatus string
}

// Clusters lists the remote clusters, by ID.
func (c *Controller) Clusters() []Info {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Info, 0, len(c.clusters))
	for _, cl := range c.clusters {
		out = append(out, Info{ID: cl.ID, SecretName: cl.SecretName, SyncStatus: cl.SyncStatus()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Cluster returns the remote cluster of an ID (nil: none).
func (c *Controller) Cluster(id string) *Cluster {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clusters[id]
}

func (c *Controller) processNext() bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	err := c.reconcile(key)
	c.mu.Lock()
	delete(c.initial, key)
	c.mu.Unlock()
	if err != nil {
		mcLog.Warn("remote secret", "secret", key, "error", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *Controller) sourceSynced() bool {
	if c.files != nil {
		return c.files.hasSynced()
	}
	return c.informer.HasSynced()
}

func (c *Controller) sourceKeys() []string {
	if c.files != nil {
		return c.files.keys()
	}
	return c.informer.GetStore().ListKeys()
}

// reconcile brings the clusters of one secret (or kubeconfig file) in
// line with it.
func (c *Controller) reconcile(key string) error {
	data := map[string][]byte{}
	if c.files != nil {
		d, err := c.files.get(key)
		if err != nil {
			// conflicting files: the cluster keeps what it had
			mcLog.Error("conflicting file-backed kubeconfigs, keeping the existing configuration", "cluster", key, "error", err)
			if c.opts.Problems != nil {
				c.opts.Problems.Report("multicluster", key, []diag.Problem{{Severity: diag.Error, Source: "multicluster",
					Object: "kubeconfig files " + c.opts.KubeconfigDir, Field: "data." + key[1:], Message: err.Error()}})
			}
			return nil
		}
		if d != nil {
			data = d
		}
	} else {
		obj, exists, err := c.informer.GetStore().GetByKey(key)
		if err != nil {
			return err
		}
		if sec, ok := obj.(*corev1.Secret); exists && ok && sec.Labels[SecretLabel] == "true" {
			data = sec.Data
		}
	}
	c.mu.Lock()
	previous := c.bySecret[key]
	c.mu.Unlock()
	for _, id := range previous {
		if _, ok := data[id]; !ok {
			c.remove(key, id)
		}
	}
	var problems []diag.Problem
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(data)) {
		if p, err := c.apply(key, id, data[id]); p != nil {
			problems = append(problems, *p)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	if c.opts.Problems != nil {
		c.opts.Problems.Report("multicluster", key, problems)
	}
	c.recordCount()
	return errors.Join(errs...)
}

// apply adds or updates the cluster id of secret key; a problem (and, when
// worth a retry, an error) when it cannot.
func (c *Controller) apply(key, id string, kubeconfig []byte) (*diag.Problem, error) {
	object := "Secret " + key
	if c.files != nil {
		object = "kubeconfig files " + c.opts.KubeconfigDir
	}
	if id == c.opts.ClusterID {
		mcLog.Info("ignoring the cluster istiod runs in", "secret", key, "cluster", id)
		return &diag.Problem{Severity: diag.Warning, Source: "multicluster", Object: object, Field: "data." + id,
			Message: fmt.Sprintf("cluster %s is the cluster istiod runs in: ignored", id)}, nil
	}
	sum := sha256.Sum256(kubeconfig)
	c.mu.Lock()
	prev := c.clusters[id]
	c.mu.Unlock()
	if prev != nil && prev.SecretName != key {
		mcLog.Warn("cluster has already been registered", "secret", key, "cluster", id, "by", prev.SecretName)
		return &diag.Problem{Severity: diag.Warning, Source: "multicluster", Object: object, Field: "data." + id,
			Message: fmt.Sprintf("cluster %s has already been registered by secret %s: ignored", id, prev.SecretName)}, nil
	}
	if prev != nil && prev.sum == sum {
		return nil, nil
	}
	client, err := c.opts.BuildClient(kubeconfig, id)
	if err != nil {
		err = fmt.Errorf("cluster %s: %v", id, err)
		return &diag.Problem{Severity: diag.Error, Source: "multicluster", Object: object, Field: "data." + id,
			Message: err.Error()}, err
	}
	action := "adding"
	if prev != nil {
		action = "updating"
	}
	mcLog.Info(action+" cluster", "secret", key, "cluster", id)
	cl := newCluster(id, key, client, sum)
	var abandoned *Cluster
	c.mu.Lock()
	c.clusters[id] = cl
	if prev == nil {
		c.bySecret[key] = append(c.bySecret[key], id)
	} else if prev.replaces != nil {
		// prev never synced: the cluster it was to replace serves on
		// until cl syncs, and prev goes now
		cl.replaces, prev.replaces, abandoned = prev.replaces, nil, prev
	} else {
		cl.replaces = prev
	}
	c.mu.Unlock()
	if abandoned != nil {
		c.stopCluster(abandoned, cl)
	}
	c.start(cl)
	return nil, nil
}

// start builds every handler's components on cl, starts its informers
// and, once they synced, retires the cluster it replaces.
func (c *Controller) start(cl *Cluster) {
	synced := make([]func() bool, 0, len(c.handlers))
	c.hmu.Lock()
	for _, h := range c.handlers {
		synced = append(synced, h.ClusterAdded(cl))
	}
	c.hmu.Unlock()
	cl.Client.Start(cl.stop)
	recordSyncStatus(cl.ID, SyncStatusSyncing)
	go func() {
		var timeout <-chan time.Time
		if c.opts.SyncTimeout > 0 {
			t := time.NewTimer(c.opts.SyncTimeout)
			defer t.Stop()
			timeout = t.C
		}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-cl.stop:
				return
			case <-timeout:
				mcLog.Error("remote cluster failed to sync", "cluster", cl.ID, "timeout", c.opts.SyncTimeout)
				syncTimeouts.WithLabelValues(cl.ID).Inc()
				cl.setStatus(SyncStatusTimeout)
				cl.markReady()
				timeout = nil
			case <-tick.C:
				if !allTrue(synced) {
					continue
				}
				cl.setStatus(SyncStatusSynced)
				cl.markReady()
				mcLog.Info("remote cluster synced", "cluster", cl.ID)
				c.mu.Lock()
				prev := cl.replaces
				cl.replaces = nil
				c.mu.Unlock()
				if prev != nil {
					c.stopCluster(prev, cl)
				}
				return
			}
		}
	}()
}

// stopCluster stops cl and tells the handlers (replacement: the cluster
// of its ID that serves instead, nil for none).
func (c *Controller) stopCluster(cl, replacement *Cluster) {
	cl.shutdown()
	c.hmu.Lock()
	defer c.hmu.Unlock()
	for _, h := range c.handlers {
		h.ClusterRemoved(cl, replacement)
	}
}

// remove stops the cluster id of secret key and tells the handlers.
func (c *Controller) remove(key, id string) {
	c.mu.Lock()
	cl := c.clusters[id]
	if cl == nil || cl.SecretName != key {
		c.mu.Unlock()
		return
	}
	delete(c.clusters, id)
	prev := cl.replaces
	cl.replaces = nil
	ids := c.bySecret[key]
	for i, x := range ids {
		if x == id {
			ids = append(ids[:i:i], ids[i+1:]...)
			break
		}
	}
	if len(ids) == 0 {
		delete(c.bySecret, key)
	} else {
		c.bySecret[key] = ids
	}
	c.mu.Unlock()
	mcLog.Info("deleting cluster", "secret", key, "cluster", id)
	if prev != nil {
		c.stopCluster(prev, nil)
	}
	c.stopCluster(cl, nil)
	clearSyncStatus(id)
}

func (c *Controller) recordCount() {
	c.mu.Lock()
	n := len(c.clusters)
	c.mu.Unlock()
	managedClusters.WithLabelValues("remote").Set(float64(n))
}

func allTrue(fs []func() bool) bool {
	for _, f := range fs {
		if f != nil && !f() {
			return false
		}
	}
	return true
}
