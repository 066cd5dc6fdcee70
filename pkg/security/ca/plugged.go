package ca

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Files of a kubernetes.io/tls Secret mounted as ROOT_CA_DIR.
const (
	TLSSecretCACertFile   = "tls.crt"
	TLSSecretCAKeyFile    = "tls.key"
	TLSSecretRootCertFile = "ca.crt"
)

// pluggedFiles are the paths of a plugged-in CA.
type pluggedFiles struct {
	signingCert, signingKey, rootCert string
	chain                             []string
}

// detectPluggedFiles picks the layout of dir as Istio does: tls.crt,
// tls.key and ca.crt when tls.crt exists (the chain is tls.crt then
// ca.crt), else ca-cert.pem, ca-key.pem, root-cert.pem and cert-chain.pem.
func detectPluggedFiles(dir string) (pluggedFiles, error) {
	tlsCert := filepath.Join(dir, TLSSecretCACertFile)
	if _, err := os.Stat(tlsCert); err == nil {
		return pluggedFiles{
			signingCert: tlsCert,
			signingKey:  filepath.Join(dir, TLSSecretCAKeyFile),
			rootCert:    filepath.Join(dir, TLSSecretRootCertFile),
			chain:       []string{tlsCert, filepath.Join(dir, TLSSecretRootCertFile)},
		}, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return pluggedFiles{}, err
	}
	return pluggedFiles{
		signingCert: filepath.Join(dir, CACertFile),
		signingKey:  filepath.Join(dir, CAKeyFile),
		rootCert:    filepath.Join(dir, RootCertFile),
		chain:       []string{filepath.Join(dir, CertChainFile)},
	}, nil
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// loadPlugged loads the plugged-in CA of dir. found is false when none of
// its files exist; a partial set is an error, as in Istio.
func loadPlugged(dir string, now time.Time) (b *bundle, found bool, err error) {
	files, err := detectPluggedFiles(dir)
	if err != nil {
		return nil, false, err
	}
	var have, missing []string
	for _, p := range []string{files.signingKey, files.signingCert, files.rootCert} {
		ok, err := exists(p)
		if err != nil {
			return nil, false, err
		}
		if ok {
			have = append(have, p)
		} else {
			missing = append(missing, p)
		}
	}
	chainFound := false
	for _, p := range files.chain {
		ok, err := exists(p)
		if err != nil {
			return nil, false, err
		}
		chainFound = chainFound || ok
	}
	if chainFound {
		have = append(have, files.chain[0])
	} else {
		missing = append(missing, files.chain[0])
	}
	if len(have) == 0 {
		return nil, false, nil
	}
	if len(missing) > 0 {
		return nil, true, fmt.Errorf("incomplete signing CA bundle detected in %s: missing %v", dir, missing)
	}
	cert, err := os.ReadFile(files.signingCert)
	if err != nil {
		return nil, true, err
	}
	key, err := os.ReadFile(files.signingKey)
	if err != nil {
		return nil, true, err
	}
	root, err := os.ReadFile(files.rootCert)
	if err != nil {
		return nil, true, err
	}
	var chain []byte
	for _, p := range files.chain {
		c, err := os.ReadFile(p)
		if err != nil {
			return nil, true, err
		}
		chain = append(chain, c...)
	}
	b, err = newBundle(cert, key, chain, root, now)
	if err != nil {
		return nil, true, fmt.Errorf("failed to create CA KeyCertBundle (%v)", err)
	}
	if !b.signingCert.IsCA {
		return nil, true, errors.New("certificate is not authorized to sign other certificates")
	}
	return b, true, nil
}
