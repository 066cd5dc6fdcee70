package ca

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/meshplane/istiod/pkg/log"
)

var rotatorLog = log.RegisterScope("rootcertrotator", "Self-signed CA root cert rotator log")

// RootRotationDue reports whether root is inside its rotation window — the
// last gracePercentile percent of its lifetime — or expired, and otherwise
// how long until the window opens (Istio's CertUtil.GetWaitTime).
func RootRotationDue(root *x509.Certificate, now time.Time, gracePercentile int) (due bool, wait time.Duration) {
	toExpiry := root.NotAfter.Sub(now)
	if toExpiry < 0 {
		return true, 0
	}
	grace := time.Duration(float64(root.NotAfter.Sub(root.NotBefore)) * float64(gracePercentile) / 100)
	wait = toExpiry - grace
	if wait <= 0 { // Istio rotates unless the wait is positive
		return true, 0
	}
	return false, wait
}

// CheckRootRotation is one run of Istio's self-signed root rotator. It
// reads the stored root; when the store holds a root other than the one in
// use (another replica rotated it) it adopts the stored one; when the
// stored root is within its rotation window it re-signs it with the same
// key (subject O from the old root, valid from now for RootCertTTL), writes
// it to the store (ca-cert.pem and root-cert.pem) and uses it — so
// certificates issued under the old root still verify with either. If
// another writer updated the store first, the stored root is adopted
// instead. changed reports whether the root in use changed; OnRootChange
// handlers have then run. A plugged-in CA never rotates.
func (c *CA) CheckRootRotation(ctx context.Context) (changed bool, err error) {
	c.rotateMu.Lock()
	defer c.rotateMu.Unlock()
	if !c.SelfSigned() {
		return false, nil
	}
	store := c.opts.Store
	m, err := store.Load(ctx)
	if err != nil {
		return false, fmt.Errorf("fail to load CA secret %s (error: %v), skip cert rotation job", store, err)
	}
	stored, err := parseCert(m.CACert)
	if err != nil {
		return false, fmt.Errorf("CA cert in %s: %v", store, err)
	}
	now := c.clock.Now()
	if due, _ := RootRotationDue(stored, now, c.opts.RootCertGracePeriodPercentile); !due {
		rotatorLog.Info("Root cert is not about to expire, skipping root cert rotation.")
		return c.adopt(m, now)
	}
	rotatorLog.Infof("Refresh root certificate, root cert is about to expire (not after %v)", stored.NotAfter)
	key, err := parseKey(m.CAKey)
	if err != nil {
		return false, fmt.Errorf("unrecognized CA private key, skip root cert rotation: %v", err)
	}
	org := c.opts.TrustDomain
	if len(stored.Subject.Organization) > 0 {
		org = stored.Subject.Organization[0]
	}
	cert, err := newRootCert(key, org, now, c.opts.RootCertTTL)
	if err != nil {
		return false, fmt.Errorf("unable to generate CA cert and key for self-signed CA: %v", err)
	}
	next := &Material{CACert: cert, CAKey: m.CAKey, RootCert: cert, Version: m.Version}
	b, err := selfSignedBundle(next, now)
	if err != nil {
		return false, err
	}
	if err := store.Update(ctx, next); err != nil {
		if errors.Is(err, ErrConflict) {
			rotatorLog.Warnf("%s changed during root rotation; using the stored root", store)
			latest, lerr := store.Load(ctx)
			if lerr != nil {
				return false, lerr
			}
			return c.adopt(latest, now)
		}
		return false, fmt.Errorf("failed to update CA secret (error: %v)", err)
	}
	rotatorLog.Infof("Root certificate is written into CA secret: %s", cert)
	c.install(b)
	c.notify()
	rotatorLog.Info("Root certificate rotation is completed successfully.")
	return true, nil
}

// adopt installs the stored material when it differs from the one in use.
func (c *CA) adopt(m *Material, now time.Time) (bool, error) {
	if bytes.Equal(c.state.Load().caCertPEM, m.CACert) {
		return false, nil
	}
	rotatorLog.Warnf("CA cert in KeyCertBundle does not match CA cert in %s. Start to reload root cert into KeyCertBundle", c.opts.Store)
	b, err := selfSignedBundle(m, now)
	if err != nil {
		return false, fmt.Errorf("failed to reload root cert into KeyCertBundle (%v)", err)
	}
	c.install(b)
	c.notify()
	rotatorLog.Info("Successfully reloaded root cert into KeyCertBundle.")
	return true, nil
}

// Run checks the self-signed root every RootCertCheckInterval until stop is
// closed, after a random delay below the interval unless
// DisableRootRotatorJitter (so replicas do not check together). It returns
// at once for a plugged-in CA or when rotation is disabled. The caller owns
// the goroutine.
func (c *CA) Run(stop <-chan struct{}) {
	interval := c.opts.RootCertCheckInterval
	if interval <= 0 || !c.SelfSigned() {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if !c.opts.DisableRootRotatorJitter {
		backoff := time.Duration(rand.Int64N(int64(interval))).Truncate(time.Second)
		rotatorLog.Infof("Set up back off time %s to start rotator.", backoff)
		rotatorLog.Infof("Jitter is enabled, wait %s before starting root cert rotator.", backoff)
		t := c.clock.NewTimer(backoff)
		select {
		case <-t.C():
			rotatorLog.Info("Jitter complete, start rotator.")
		case <-stop:
			t.Stop()
			rotatorLog.Info("Received stop signal, so stop the root cert rotator.")
			return
		}
	}
	t := c.clock.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C():
			rotatorLog.Info("Check and rotate root cert.")
			if _, err := c.CheckRootRotation(ctx); err != nil {
				rotatorLog.Errorf("%v", err)
			}
			t.Reset(interval)
		case <-stop:
			rotatorLog.Info("Received stop signal, so stop the root cert rotator.")
			return
		}
	}
}
