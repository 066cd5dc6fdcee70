// Package kube is the control plane's access to a Kubernetes API server: one
// Client bundling the kube, Istio, Gateway API and apiextensions clientsets
// with their shared informer factories, built from a kubeconfig or in-cluster
// config (InCluster: rest.InClusterConfig with its inputs given), plus a
// fake Client on client-go's fake clientsets for unit tests. A Client has
// its own transport and Close lets go of it (informers stopped, idle
// connections closed).
package kube
