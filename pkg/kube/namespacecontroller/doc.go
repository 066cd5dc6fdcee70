// Package namespacecontroller publishes the mesh's root certificate to
// every namespace istiod serves, as Istio's istiod does: ConfigMap
// istio-ca-root-cert (key root-cert.pem) and, beside it, istio-ca-crl (key
// ca-crl.pem), both labelled istio.io/config=true. A ConfigMap that is
// deleted or edited is rewritten; one that already says the right thing is
// never rewritten. kube-public, kube-node-lease and local-path-storage get
// none (Istio's ignored namespaces but kube-system, where ztunnel may run).
// Run it under leader election: one writer per cluster.
package namespacecontroller
