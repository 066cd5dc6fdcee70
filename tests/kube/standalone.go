package kube

import "os"

// StartServer starts an etcd and kube-apiserver outside a test, for tools
// such as tests/loadtest: it installs the CRDs as Start does (see
// WithoutCRDs, WithCRDs) and writes the kubeconfig into dir. The caller owns
// the returned Env and must call Stop, also when StartServer fails after the
// processes started (it then returns the partial Env with the error).
func StartServer(dir string, opts ...Option) (*Env, error) {
	o := options{skip: map[string]bool{}}
	for _, opt := range opts {
		opt(&o)
	}
	names, err := crdSelection(o)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return start(dir, names, o)
}
