// Package leaderelection runs functions only while this replica holds a
// lock, so that each object istiod writes to the cluster has one writer
// however many replicas run.
//
// Election holds a Kubernetes Lease (client-go leader election).
// Prioritized is Istio's election of its cluster-wide controllers: a
// ConfigMap lock whose record carries the holder's key (its revision,
// "^"-prefixed for an istiod outside the cluster), so that the default
// revision, and a local istiod over an external one, take the lock from a
// live holder (prioritized.go; defaultrevision.go follows the cluster's
// default revision). Istio's lock names and kinds are kept, so that our
// replicas and Istio's contend for the same lock.
//
// Timing.Disabled is ENABLE_LEADER_ELECTION=false: both elections then
// run their functions from Run until stop without touching a lock, as
// Istio's bypassed elections do.
package leaderelection
