package bootstrap

import (
	"context"
	"math/rand/v2"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshplane/istiod/pkg/config/schema/gvr"
	"github.com/meshplane/istiod/pkg/kube/leaderelection"
	"github.com/meshplane/istiod/pkg/kube/multicluster"
	"github.com/meshplane/istiod/pkg/kube/namespace"
	"github.com/meshplane/istiod/pkg/kube/namespacecontroller"
	"github.com/meshplane/istiod/pkg/webhooks/patcher"
)

// ControlPlaneClustersAnnotation, on istiod's namespace in a remote
// cluster, lists the IDs of the clusters (comma separated, exactly; "*"
// for any) whose external istiod controls it.
const ControlPlaneClustersAnnotation = "topology.istio.io/controlPlaneClusters"

// RemoteWriterLabel is the pprof label every goroutine istiod runs to
// write in a remote cluster carries, "<pod name>/<cluster ID>": a
// goroutine profile shows what each remote cluster runs (and that nothing
// outlives it).
const RemoteWriterLabel = "istiod-remote-writer"

// remoteFilters keeps the discoverySelectors filter of each remote
// cluster: the local mesh config's selectors matched against that
// cluster's namespaces, as Istio builds one per cluster. The remote
// registry and the remote namespace controller read it.
type remoteFilters struct {
	s         *Server
	mu        sync.Mutex
	byCluster map[*multicluster.Cluster]*namespace.DiscoveryFilter
}

func newRemoteFilters(s *Server) *remoteFilters {
	f := &remoteFilters{s: s, byCluster: map[*multicluster.Cluster]*namespace.DiscoveryFilter{}}
	s.mesh.AddMeshHandler(func() {
		f.mu.Lock()
		all := make([]*namespace.DiscoveryFilter, 0, len(f.byCluster))
		for _, df := range f.byCluster {
			all = append(all, df)
		}
		f.mu.Unlock()
		for _, df := range all {
			df.SetMesh(s.mesh.Mesh())
		}
	})
	return f
}

// of is c's filter, built on c's Namespace informer the first time (nil
// when namespaces cannot be watched).
func (f *remoteFilters) of(c *multicluster.Cluster) *namespace.DiscoveryFilter {
	f.mu.Lock()
	defer f.mu.Unlock()
	if df, ok := f.byCluster[c]; ok {
		return df
	}
	inf, err := c.Client.Informer(gvr.Namespace)
	if err != nil {
		scope.Errorf("cluster %s: cannot watch namespaces: %v", c.ID, err)
		f.byCluster[c] = nil
		return nil
	}
	df := namespace.NewDiscoveryFilter(inf, f.s.mesh.Mesh())
	f.byCluster[c] = df
	return df
}

func (f *remoteFilters) drop(c *multicluster.Cluster) {
	f.mu.Lock()
	delete(f.byCluster, c)
	f.mu.Unlock()
}

// remoteWrites is what an external istiod (EXTERNAL_ISTIOD) writes in a
// remote cluster that names it, as Istio 1.31 does: when the cluster's
// istiod namespace carries ControlPlaneClustersAnnotation listing the
// local cluster ID or "*", istiod joins the namespace controller's
// prioritized election there (a ConfigMap lock, as a remote candidate: a
// local istiod of the same revision takes it over) and, while it leads,
// writes istio-ca-root-cert in the cluster's served namespaces; and it
// patches the caBundle of its revision's injection webhooks there (every
// replica, no election, as in Istio). Nothing is written otherwise, and
// everything stops with the cluster.
type remoteWrites struct {
	s       *Server
	filters *remoteFilters

	once      sync.Once
	mu        sync.Mutex
	byCluster map[*multicluster.Cluster]*remoteWriter
}

// remoteWriter is one remote cluster's writers.
type remoteWriter struct {
	c   *multicluster.Cluster
	nsc *namespacecontroller.Controller
	wh  *patcher.Patcher
}

func (h *remoteWrites) ClusterAdded(c *multicluster.Cluster) func() bool {
	s := h.s
	if !s.args.Multicluster.ExternalIstiod || s.secure == nil {
		return nil
	}
	sec := s.secure
	h.once.Do(func() {
		// one handler for every cluster: the CA's handlers cannot be removed
		sec.ca.OnRootChange(h.republish)
		if sec.files != nil {
			sec.files.onCAChange(h.republish)
		}
	})
	var filter func(string) bool
	df := h.filters.of(c)
	if df != nil {
		filter = df.Filter
	}
	w := &remoteWriter{c: c,
		nsc: namespacecontroller.New(c.Client.Kube(), namespacecontroller.Options{Filter: filter, Root: sec.publishedRoot()}),
		wh: patcher.New(c.Client.Kube(), patcher.Options{Revision: s.args.Revision, CABundle: sec.publishedRoot(),
			InjectionOnly: true}),
	}
	if df != nil {
		df.AddHandler(w.nsc.ResyncAll)
	}
	h.mu.Lock()
	h.byCluster[c] = w
	h.mu.Unlock()
	ctx := pprof.WithLabels(context.Background(), pprof.Labels(RemoteWriterLabel, s.identity()+"/"+c.ID))
	go func() {
		pprof.SetGoroutineLabels(ctx)
		h.run(w)
	}()
	return nil // writing never holds up the cluster's sync
}

func (h *remoteWrites) ClusterRemoved(c *multicluster.Cluster, _ *multicluster.Cluster) {
	// its goroutines end with c.Stopped()
	h.mu.Lock()
	delete(h.byCluster, c)
	h.mu.Unlock()
}

// republish hands a new root to every remote cluster's writers.
func (h *remoteWrites) republish() {
	root := h.s.secure.publishedRoot()
	h.mu.Lock()
	all := make([]*remoteWriter, 0, len(h.byCluster))
	for _, w := range h.byCluster {
		all = append(all, w)
	}
	h.mu.Unlock()
	for _, w := range all {
		w.nsc.SetRoot(root)
		w.wh.SetCABundle(root)
	}
}

// run decides once whether istiod controls the cluster, then writes there
// until the cluster stops.
func (h *remoteWrites) run(w *remoteWriter) {
	s, c := h.s, w.c
	stop := c.Stopped()
	lead, ok := h.shouldLead(c)
	if !ok {
		return // stopped before the namespace could be read
	}
	scope.Infof("should join leader-election for cluster %s: %t", c.ID, lead)
	if !lead {
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		scope.Infof("patching the injection webhooks' caBundle in cluster %s", c.ID)
		w.wh.Run(stop)
	}()
	timing := s.args.Security.LeaderElection
	var defaultRevision func() string
	if !timing.Disabled {
		// with the election disabled Istio watches no default revision
		revisions := leaderelection.NewDefaultRevisionWatcher(c.Client.Kube())
		wg.Add(1)
		go func() {
			defer wg.Done()
			revisions.Run(stop)
		}()
		defaultRevision = revisions.Get
	}
	election := leaderelection.NewPrioritized(c.Client.Kube(), leaderelection.PrioritizedOptions{
		Namespace: s.args.Namespace, Name: leaderelection.NamespaceController, Identity: s.identity(),
		Revision: s.args.Revision, Remote: true, DefaultRevision: defaultRevision, Timing: timing})
	election.AddRunFunction(func(leaderStop <-chan struct{}) {
		scope.Infof("starting the namespace controller for cluster %s", c.ID)
		w.nsc.Run(leaderStop)
	})
	scope.Infof("joining leader-election for %s in %s on cluster %s", leaderelection.NamespaceController, s.args.Namespace, c.ID)
	election.Run(stop)
}

// shouldLead reads istiod's namespace in c, retried with backoff (500 ms
// growing to a minute, as Istio's) until it is read or found missing;
// ok is false when c stopped first.
func (h *remoteWrites) shouldLead(c *multicluster.Cluster) (lead, ok bool) {
	stop := c.Stopped()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	wait := 500 * time.Millisecond
	for {
		ns, err := c.Client.Kube().CoreV1().Namespaces().Get(ctx, h.s.args.Namespace, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return false, true
		case err == nil:
			return controlsCluster(ns.Annotations[ControlPlaneClustersAnnotation], h.s.args.ClusterID), true
		}
		scope.Warnf("cluster %s: reading namespace %s: %v (retrying)", c.ID, h.s.args.Namespace, err)
		t := time.NewTimer(wait/2 + time.Duration(rand.Int64N(int64(wait))))
		select {
		case <-stop:
			t.Stop()
			return false, false
		case <-t.C:
		}
		wait = min(wait*3/2, time.Minute)
	}
}

// controlsCluster reports whether the annotation's list names local or
// "*" (entries compared exactly, as Istio compares them).
func controlsCluster(annotation, local string) bool {
	if annotation == "" {
		return false
	}
	for _, id := range strings.Split(annotation, ",") {
		if id == "*" || id == local {
			return true
		}
	}
	return false
}
