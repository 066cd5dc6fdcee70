// Command crds writes the CustomResourceDefinitions that istiod reads into
// manifests/crds/, copied from the Go modules pinned in go.mod:
//
//	manifests/crds/istio.yaml        istio.io/api kubernetes/customresourcedefinitions.gen.yaml
//	manifests/crds/gateway-api.yaml  sigs.k8s.io/gateway-api config/crd/experimental/ (selected kinds)
//
// The output depends only on the module versions, so it is deterministic.
// With -check it writes nothing and exits 1 when a file is missing or stale.
//
// Usage (from the repository root): go run ./hack/crds [-check] [-out manifests/crds]
package main
