// Package crdclient reads and writes Istio and Gateway API objects through
// typed Kubernetes clients. translate.go holds the hand-written half of the
// translation between typed objects and config.Config; types.gen.go holds the
// generated per-kind half.
//
// A kind backed by a CRD starts empty and synced while the CRD is absent;
// crd.go watches CRDs and starts the kind's informer once its CRD is
// established (KindServed tells writers when that is). Per kind, the
// informer's handlers and the namespace refilter are serialised: a refilter
// never undoes an event that lands between its list and its reset.
package crdclient
