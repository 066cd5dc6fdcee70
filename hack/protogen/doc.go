// Command protogen generates the Go code of this repository's .proto files
// (the ztunnel workload API under pkg/workloadapi) without protoc: it parses
// them with github.com/bufbuild/protocompile, hands the descriptors to
// protoc-gen-go as a CodeGeneratorRequest, and writes each *.pb.go beside its
// .proto.
//
// protoc-gen-go is the `tool` of go.mod (`go tool protoc-gen-go`), so its
// version is the google.golang.org/protobuf that go.mod pins, and a machine
// with only Go can regenerate. Proto file names are relative to the
// repository root (pkg/workloadapi/workload.proto), which is also their
// import path, and the request names no compiler version, so the generated
// headers do not depend on the machine.
//
// With -check it writes nothing and exits 1 when a generated file is
// missing, stale, or left over from a .proto that no longer exists.
//
// Usage (from the repository root):
//
//	go run ./hack/protogen [-check] [-go go] [dir ...]   (default dir: pkg/workloadapi)
package main
