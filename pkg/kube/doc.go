// Package kube is the control plane's access to a Kubernetes API server: one
// Client bundling the kube, Istio, Gateway API and apiextensions clientsets
// with their shared informer factories, built from a kubeconfig or in-cluster
// config, plus a fake Client on client-go's fake clientsets for unit tests.
package kube
