// Package security is the authorization half of the workload API: the
// istio.security protobuf messages (Authorization and the groups, rules and
// matches it is made of) istiod serves to ztunnel as
// type.googleapis.com/istio.security.Authorization.
//
// authorization.proto is this project's own text of Istio 1.31's wire
// contract, and authorization.pb.go is generated from it by hack/protogen
// (`make gen`, checked by `make gen-check`); the tests of the parent package
// workloadapi compare it with Istio's file.
package security
