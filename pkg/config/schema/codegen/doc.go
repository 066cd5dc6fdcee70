// Command codegen turns pkg/config/schema/metadata.yaml into the generated
// kind registry: gvk, gvr, kind, collections and the CRD client's translation
// map. Run it through `go generate ./pkg/config/schema/...` (make gen).
//
// Usage: codegen -metadata metadata.yaml -root <repo root> [-check]
// With -check it writes nothing and fails when a generated file is stale.
package main
