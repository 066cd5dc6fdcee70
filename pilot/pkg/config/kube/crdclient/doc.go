// Package crdclient reads and writes Istio and Gateway API objects through
// typed Kubernetes clients. translate.go holds the hand-written half of the
// translation between typed objects and config.Config; types.gen.go holds the
// generated per-kind half.
package crdclient
