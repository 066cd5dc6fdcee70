package multicluster

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshplane/istiod/pkg/monitoring"
)

var (
	managedClusters = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "istiod_managed_clusters",
		Help: "Number of clusters managed by istiod"}, []string{"cluster_type"})
	syncStatus = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "istiod_remote_cluster_sync_status",
		Help: "Current synchronization state of remote clusters managed by istiod: one sample per cluster and state, 1 for the cluster's state."},
		[]string{"cluster", "cluster_type", "status"})
	syncTimeouts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "remote_cluster_sync_timeouts_total",
		Help: "Number of times remote clusters took too long to sync, causing slow startup that excludes remote clusters."}, []string{"cluster"})
	secretEvents = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "remote_cluster_secret_events_total",
		Help: "Number of remote cluster secret events."}, []string{"event"})
)

func init() { monitoring.MustRegister(managedClusters, syncStatus, syncTimeouts, secretEvents) }

var syncStates = []string{SyncStatusSynced, SyncStatusSyncing, SyncStatusTimeout, SyncStatusClosed}

// recordSyncStatus sets the cluster's state to 1 and the others to 0.
func recordSyncStatus(cluster, status string) {
	for _, s := range syncStates {
		v := 0.0
		if s == status {
			v = 1
		}
		syncStatus.WithLabelValues(cluster, "remote", s).Set(v)
	}
}

// clearSyncStatus zeroes every state of a cluster that is gone.
func clearSyncStatus(cluster string) {
	for _, s := range syncStates {
		syncStatus.WithLabelValues(cluster, "remote", s).Set(0)
	}
}
