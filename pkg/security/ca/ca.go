package ca

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/log"
)

var pkiLog = log.RegisterScope("pkica", "Citadel CA log")

// CA signs certificates with the material it loaded or created. It is safe
// for concurrent use.
type CA struct {
	opts  Options
	clock clock.Clock

	state atomic.Pointer[bundle]
	// generation counts the bundles installed, so holders of derived
	// certificates can tell the material changed.
	generation atomic.Uint64

	rotateMu sync.Mutex // one rotation check at a time

	handlersMu sync.Mutex
	handlers   []func()
}

// New loads or creates the signing material, in Istio's order: a complete
// plugged-in CA in Options.PluggedCertDir (a partial one is an error);
// otherwise the self-signed root in Options.Store, created there once if
// missing. When another replica creates it first (ErrAlreadyExists), New
// re-reads the store and uses that root, so replicas never mint two roots.
func New(ctx context.Context, o Options) (*CA, error) {
	o = o.withDefaults()
	c := &CA{opts: o, clock: o.Clock}
	if o.PluggedCertDir != "" {
		b, found, err := loadPlugged(o.PluggedCertDir, c.clock.Now())
		if err != nil {
			return nil, fmt.Errorf("failed to create an istiod CA: %v", err)
		}
		if found {
			pkiLog.Infof("Use local CA certificate from %s", o.PluggedCertDir)
			c.install(b)
			return c, nil
		}
	}
	b, err := c.loadOrCreateSelfSigned(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to create an istiod CA: %w", err)
	}
	c.install(b)
	pkiLog.Infof("Set secret name for self-signed CA cert rotator to %s", storeName(o.Store))
	return c, nil
}

// storeName is what Istio logs for the self-signed root's home.
func storeName(s Store) string {
	if _, ok := s.(*SecretStore); ok {
		return CASecretName
	}
	return s.String()
}

func (c *CA) loadOrCreateSelfSigned(ctx context.Context) (*bundle, error) {
	store := c.opts.Store
	for attempt := 0; attempt < 3; attempt++ {
		m, err := store.Load(ctx)
		switch {
		case err == nil:
			b, err := selfSignedBundle(m, c.clock.Now())
			if err != nil {
				return nil, fmt.Errorf("CA material in %s: %v", store, err)
			}
			pkiLog.Infof("Load signing key and cert from existing secret %s", store)
			pkiLog.Infof("Using existing public key: %s", m.CACert)
			return b, nil
		case errors.Is(err, ErrNotFound):
			if _, ok := store.(*SecretStore); ok {
				pkiLog.Infof("CASecret %s not found, will create one", CASecretName)
			} else {
				pkiLog.Infof("CA root not found in %s, will create one", store)
			}
			m, err := newRootMaterial(c.opts, c.clock.Now())
			if err != nil {
				return nil, err
			}
			b, err := selfSignedBundle(m, c.clock.Now())
			if err != nil {
				return nil, err
			}
			err = store.Create(ctx, m)
			if errors.Is(err, ErrAlreadyExists) {
				pkiLog.Infof("%s was created by another writer meanwhile; using its root", store)
				continue
			}
			if err != nil {
				pkiLog.Warnf("Failed to create secret %s (%v)", store, err)
				return nil, err
			}
			pkiLog.Infof("Using self-generated public key: %s", m.CACert)
			return b, nil
		default:
			return nil, err
		}
	}
	return nil, fmt.Errorf("%s exists but holds no readable CA material", store)
}

// install makes b the material in use; the caller then calls notify when
// it replaced earlier material.
func (c *CA) install(b *bundle) {
	c.state.Store(b)
	c.generation.Add(1)
}

func (c *CA) notify() {
	c.handlersMu.Lock()
	hs := append([]func(){}, c.handlers...)
	c.handlersMu.Unlock()
	for _, h := range hs {
		h()
	}
}

// OnRootChange registers f, called (in the goroutine that rotated or
// reloaded the root, after the new material is in use) whenever the root
// changes: to republish the root ConfigMaps and webhook caBundles.
func (c *CA) OnRootChange(f func()) {
	c.handlersMu.Lock()
	defer c.handlersMu.Unlock()
	c.handlers = append(c.handlers, f)
}

// TrustDomain is the trust domain of the CA's options.
func (c *CA) TrustDomain() string { return c.opts.TrustDomain }

// DefaultCertTTL is the TTL applied when a request asks for none.
func (c *CA) DefaultCertTTL() time.Duration { return c.opts.DefaultCertTTL }

// MaxCertTTL is the longest TTL a request may ask for.
func (c *CA) MaxCertTTL() time.Duration { return c.opts.MaxCertTTL }

// SelfSigned reports whether the CA uses a self-signed root (false for a
// plugged-in CA).
func (c *CA) SelfSigned() bool { return c.state.Load().selfSigned }

// RootCertPEM is the published root bundle (root-cert.pem; for a
// self-signed CA the root certificate, ending in a newline). The caller
// owns the copy.
func (c *CA) RootCertPEM() []byte { return bytes.Clone(c.state.Load().rootPEM) }

// CertChainPEM is the plugged-in cert-chain.pem (empty for a self-signed
// CA). The caller owns the copy.
func (c *CA) CertChainPEM() []byte { return bytes.Clone(c.state.Load().certChainPEM) }

// SigningCertPEM is the signing certificate (ca-cert.pem). The caller owns
// the copy.
func (c *CA) SigningCertPEM() []byte { return bytes.Clone(c.state.Load().caCertPEM) }

// RootCerts are the parsed roots; shared, callers must not modify them.
func (c *CA) RootCerts() []*x509.Certificate {
	return append([]*x509.Certificate(nil), c.state.Load().roots...)
}

// RootCertPool is a new pool with the current roots, to verify client
// certificates.
func (c *CA) RootCertPool() *x509.CertPool { return c.state.Load().rootPool() }
