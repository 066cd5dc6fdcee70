// Package multicluster turns remote secrets into remote clusters, as
// Istio's secret controller does: every Secret in istiod's namespace
// labelled istio/multiCluster=true holds, per data key, the kubeconfig of
// the cluster of that ID (`istioctl create-remote-secret` writes one such
// key, and the networking.istio.io/cluster annotation naming it).
//
// For each cluster the controller builds a kube.Client from the
// kubeconfig (checked as Istio checks an untrusted one: no exec, no auth
// provider but oidc, no file references unless
// PILOT_INSECURE_MULTICLUSTER_KUBECONFIG_OPTIONS allows them), hands it to
// every Handler (which build their components on it: a service registry,
// say) and then starts its informers. A cluster is "syncing" until every
// handler's components have synced, then "synced"; after the sync timeout
// (PILOT_REMOTE_CLUSTER_TIMEOUT, 30s) it is "timeout" and no longer holds
// up readiness, though it goes on syncing.
//
// Lifecycle, per secret event:
//   - a new cluster ID: added;
//   - the same ID with a different kubeconfig (rotated credentials): the
//     new cluster is built and started beside the old one, and the old one
//     is stopped only once the new one synced or timed out (make before
//     break: the cluster's endpoints never leave the proxies meanwhile);
//   - the same kubeconfig again: nothing;
//   - an ID gone from the secret, or the secret deleted: the cluster is
//     stopped and every handler told;
//   - the ID of the cluster istiod runs in, or one another secret already
//     registered: ignored, with a warning.
//
// A kubeconfig that cannot be used is reported on the problem board
// (/debug/warningz) naming the secret, the cluster and the reason, and is
// retried when the secret changes; the other clusters are not affected.
// Stopping a cluster closes its stop channel, which ends its informers and
// every goroutine its handlers started on it, and closes its client (its
// connections): nothing outlives its cluster.
//
// With Options.KubeconfigDir (PILOT_MULTICLUSTER_KUBECONFIG_PATH) the
// clusters come from the kubeconfig files of a directory instead of
// secrets, with the same lifecycle (kubeconfigdir.go).
//
// Metrics are Istio's: istiod_managed_clusters{cluster_type},
// istiod_remote_cluster_sync_status{cluster,cluster_type,status},
// remote_cluster_sync_timeouts_total{cluster} and
// remote_cluster_secret_events_total{event}.
package multicluster
