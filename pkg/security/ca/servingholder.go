package ca

import (
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// ServingCertHolder keeps istiod's serving certificate fresh. It signs one
// at construction and signs a new one, on the next use, once half of the
// current one's lifetime has passed or the CA's material changed (root
// rotation, reload). A failed renewal is logged and the current certificate
// keeps serving. Safe for concurrent use; no goroutine of its own.
type ServingCertHolder struct {
	ca       *CA
	dnsNames []string
	ips      []net.IP

	mu         sync.Mutex
	cur        *tls.Certificate
	renewAt    time.Time
	generation uint64
}

// NewServingCertHolder signs the first serving certificate for dnsNames and
// ips (see ServingCertSANs and SplitHosts).
func NewServingCertHolder(c *CA, dnsNames []string, ips []net.IP) (*ServingCertHolder, error) {
	h := &ServingCertHolder{ca: c, dnsNames: append([]string(nil), dnsNames...), ips: append([]net.IP(nil), ips...)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.renewLocked(); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *ServingCertHolder) renewLocked() error {
	gen := h.ca.generation.Load()
	cert, err := h.ca.ServingCert(h.dnsNames, h.ips)
	if err != nil {
		return err
	}
	leaf := cert.Leaf
	h.cur = &cert
	h.renewAt = leaf.NotBefore.Add(leaf.NotAfter.Sub(leaf.NotBefore) / 2)
	h.generation = gen
	pkiLog.Infof("Istiod certificates are reloaded")
	return nil
}

// Certificate returns the current certificate, renewing it first when due.
// The returned certificate is shared: do not modify it.
func (h *ServingCertHolder) Certificate() *tls.Certificate {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.ca.clock.Now().Before(h.renewAt) || h.generation != h.ca.generation.Load() {
		if err := h.renewLocked(); err != nil {
			pkiLog.Errorf("failed to renew istiod's serving certificate, keeping the current one (valid until %v): %v", h.cur.Leaf.NotAfter, err)
		}
	}
	return h.cur
}

// GetCertificate is tls.Config.GetCertificate.
func (h *ServingCertHolder) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return h.Certificate(), nil
}

// RenewAt is when the current certificate will be replaced.
func (h *ServingCertHolder) RenewAt() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.renewAt
}

// ServerTLSConfig is the TLS configuration of istiod's secure ports (TLS
// xDS/CA and webhooks): the holder's certificate, TLS 1.2 or later, ALPN h2
// and http/1.1, and a client certificate verified against the CA's current
// roots when the client presents one (so ClientCertAuthenticator sees a
// verified chain; callers without one authenticate with a token).
func ServerTLSConfig(c *CA, h *ServingCertHolder) *tls.Config {
	base := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"h2", "http/1.1"},
		GetCertificate: h.GetCertificate,
		ClientAuth:     tls.VerifyClientCertIfGiven,
	}
	out := base.Clone()
	out.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cfg := base.Clone()
		cfg.ClientCAs = c.RootCertPool()
		// the clock a caller sets on the returned config (out.Time) is the
		// one client certificates are verified at, as for a plain config
		cfg.Time = out.Time
		return cfg, nil
	}
	return out
}
