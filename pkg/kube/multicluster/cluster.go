package multicluster

import (
	"sync"
	"sync/atomic"

	"github.com/meshplane/istiod/pkg/kube"
)

// The sync states of a cluster, as Istio names them (/debug/clusterz and
// istiod_remote_cluster_sync_status).
const (
	SyncStatusSyncing = "syncing"
	SyncStatusSynced  = "synced"
	SyncStatusTimeout = "timeout"
	SyncStatusClosed  = "closed"
)

// Cluster is one remote cluster: its ID, the secret that configured it,
// and the client its handlers build on. Read-only to handlers.
type Cluster struct {
	ID string
	// SecretName is "<namespace>/<name>" of the remote secret.
	SecretName string
	Client     kube.Client

	sum      [32]byte // of the kubeconfig
	stop     chan struct{}
	stopOnce sync.Once
	status   atomic.Value // string
	// ready is closed once the cluster synced or timed out (or stopped):
	// it no longer holds up the controller's HasSynced
	ready     chan struct{}
	readyOnce sync.Once
	// replaces is the cluster of the same ID this one takes over from
	// once synced (nil: none, or taken over); the controller's lock
	// guards it
	replaces *Cluster
}

func newCluster(id, secret string, client kube.Client, sum [32]byte) *Cluster {
	c := &Cluster{ID: id, SecretName: secret, Client: client, sum: sum, stop: make(chan struct{}), ready: make(chan struct{})}
	c.status.Store(SyncStatusSyncing)
	return c
}

// Stopped is closed when the cluster stops: whatever a handler runs on the
// cluster ends with it.
func (c *Cluster) Stopped() <-chan struct{} { return c.stop }

// SyncStatus is syncing, synced, timeout or closed.
func (c *Cluster) SyncStatus() string { return c.status.Load().(string) }

func (c *Cluster) setStatus(s string) {
	c.status.Store(s)
	recordSyncStatus(c.ID, s)
}

func (c *Cluster) markReady() { c.readyOnce.Do(func() { close(c.ready) }) }

// isReady tells the cluster synced or timed out.
func (c *Cluster) isReady() bool {
	select {
	case <-c.ready:
		return true
	default:
		return false
	}
}

// shutdown stops the cluster (once) and closes its client: its informers
// end (shutdown waits for them) and its connections are let go of, so
// that a removed or rotated cluster leaves no connection pool behind.
func (c *Cluster) shutdown() {
	c.stopOnce.Do(func() {
		close(c.stop)
		c.status.Store(SyncStatusClosed)
		c.markReady()
		if c.Client != nil {
			c.Client.Close()
		}
	})
}
