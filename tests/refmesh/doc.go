// Package refmesh loads the shared reference mesh (../shared/reference/
// bookinfo beside the repository: the input and what Istio 1.31's istiod
// answered for it) through the real registries, for the tests that compare
// our answers with Istio's. Tests only: it reads tests/refdata, so it
// lives under tests/, which no production package imports (tests/arch).
package refmesh
