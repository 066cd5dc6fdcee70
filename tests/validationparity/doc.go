// Package validationparity checks that `istiod validate` accepts and rejects
// exactly the Istio objects Istio 1.31's own `istioctl validate` accepts and
// rejects. The corpus is every document whose apiVersion is an Istio
// configuration group (networking, security, telemetry, extensions
// .istio.io) in samples/, the analyzers' testdata, the validation testdata
// and the validation dataset (pkg/test/datasets/validation) of the
// istio.io/istio module that hack/istiobin.sh builds istioctl from
// (tests/istiobin.Version), read from the Go module cache, where that build
// leaves it; plus testdata/edge-cases.yaml, objects on the edges that the
// fixes made to agree.
//
// Our side is the validate command itself (cmd/istiod/app.Main), run in
// process on one file per document. Istio's side is one run of istioctl
// over a directory with one file per document, each preceded by a marker
// object that always fails, so that every error istioctl prints can be
// mapped back to its document. istioctl validate reads files only; it runs
// with an empty environment, a fresh HOME and a kubeconfig naming a loopback
// port where nothing listens, so it can reach nothing but loopback.
//
// The fixtures of pkg/config/validation/testdata/crds carry their expected
// CRD-schema error in a top-level _err field, which is no part of the
// object; it is removed before validating, as Istio's own test does.
// Both commands reject an object with an unknown field; documents that
// would differ in decoding only are listed in decodingDifferences (none).
//
// For every object istioctl rejects, each of its reasons (its messages
// without the "Kind/namespace/name: " prefix, one per error of a joined
// error) must appear verbatim in one of our errors for that object, a field
// path in front being ours. An object without a namespace is in istioctl's
// kubeconfig namespace, default, and in none for istiod validate; the texts
// that name it are compared so. The errors of istioctl's JSON decoder
// ("cannot parse proto message: ..." — golang/protobuf jsonpb's words) are
// the decoding library's, not Istio's validation's: for them our error must
// say the same thing our decoder's way (the field path, the value).
//
// Missing istioctl fails the test naming `make testbin`, as tests/istiobin
// does; a missing module source fails naming the `go mod download` that
// fetches it.
package validationparity
