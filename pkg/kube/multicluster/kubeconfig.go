package multicluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// restConfigFor parses a remote secret's kubeconfig as an untrusted one:
// it must load and validate, and use none of the options that read local
// files or run programs unless allowed names them (the values of
// PILOT_INSECURE_MULTICLUSTER_KUBECONFIG_OPTIONS: auth provider names,
// clientKey, clientCertificate, tokenFile, exec). Errors read as Istio's.
func restConfigFor(kubeconfig []byte, allowed []string) (*rest.Config, error) {
	if len(kubeconfig) == 0 {
		return nil, errors.New("kubeconfig is empty")
	}
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig cannot be loaded: %v", err)
	}
	if err := clientcmd.Validate(*raw); err != nil {
		return nil, fmt.Errorf("kubeconfig is not valid: %v", err)
	}
	if err := checkUntrusted(raw, allowed); err != nil {
		return nil, fmt.Errorf("kubeconfig is not allowed: %v", err)
	}
	return clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// checkUntrusted refuses the credentials that reach outside the secret.
func checkUntrusted(cfg *clientcmdapi.Config, allowed []string) error {
	ok := func(name string) bool { return slices.Contains(allowed, name) }
	for _, name := range slices.Sorted(maps.Keys(cfg.AuthInfos)) {
		a := cfg.AuthInfos[name]
		if p := a.AuthProvider; p != nil && p.Name != "oidc" && !ok(p.Name) {
			return fmt.Errorf("auth provider %s is not allowed", p.Name)
		}
		switch {
		case a.ClientKey != "" && !ok("clientKey"):
			return errors.New("clientKey is not allowed")
		case a.ClientCertificate != "" && !ok("clientCertificate"):
			return errors.New("clientCertificate is not allowed")
		case a.TokenFile != "" && !ok("tokenFile"):
			return errors.New("tokenFile is not allowed")
		case a.Exec != nil && !ok("exec"):
			return errors.New("exec is not allowed")
		}
	}
	return nil
}
