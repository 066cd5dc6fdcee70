// Package integration runs istiod in Kubernetes mode against a real
// kube-apiserver and etcd (tests/kube) and checks what it serves.
package integration
