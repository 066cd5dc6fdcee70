// Package leaderelection runs functions only while this replica holds a
// Kubernetes Lease (client-go leader election), so that each object istiod
// writes to the cluster has one writer however many replicas run. Istio's
// lock names are kept so that our replicas and Istio's never both write.
package leaderelection
