// Package workloadapi is the workload API istiod serves to ztunnel in ambient
// mode: the istio.workload protobuf messages (Address, Workload, Service and
// what they use), sent as type.googleapis.com/istio.workload.Address.
//
// workload.proto is this project's own text of Istio 1.31's wire contract
// (the same proto package, names, field numbers, types and oneofs; our own
// comments), and workload.pb.go is generated from it by hack/protogen
// (`make gen`; `make gen-check` fails when it is stale). compat_test.go
// compares every declaration with Istio's .proto read from the Go module
// cache, and decodes what Istio's istiod sent a ztunnel without losing a
// field. Subpackage security holds istio.security.Authorization.
//
// This is layer 0: it imports only the protobuf runtime.
package workloadapi
