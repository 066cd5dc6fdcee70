package ca_test

import (
	"crypto/tls"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/meshplane/istiod/pkg/log/logtest"
	"github.com/meshplane/istiod/pkg/security/ca"
)

func TestServingCertSANs(t *testing.T) {
	for _, tc := range []struct {
		name               string
		ns, rev, discovery string
		custom             []string
		want               []string
	}{
		{"reference", "istio-system", "", "", nil,
			[]string{"istio-pilot.istio-system.svc", "istiod-remote.istio-system.svc", "istiod.istio-system.svc"}},
		{"default revision is no revision", "istio-system", "default", "", nil,
			[]string{"istio-pilot.istio-system.svc", "istiod-remote.istio-system.svc", "istiod.istio-system.svc"}},
		{"revision", "istio-system", "canary", "", nil,
			[]string{"istio-pilot.istio-system.svc", "istiod-canary.istio-system.svc", "istiod-remote.istio-system.svc", "istiod.istio-system.svc"}},
		{"discovery host and custom hosts", "mesh", "", "istiod.example.com", []string{"10.0.0.9", " other.example.com", "", "istiod.mesh.svc"},
			[]string{"10.0.0.9", "istio-pilot.mesh.svc", "istiod-remote.mesh.svc", "istiod.example.com", "istiod.mesh.svc", "other.example.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ca.ServingCertSANs(tc.ns, tc.rev, tc.discovery, tc.custom); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestServingCertIPSANs(t *testing.T) {
	_ = logtest.Capture(t)
	c, _ := newECCA(t, ca.Options{})
	dns, ips := ca.SplitHosts(ca.ServingCertSANs("istio-system", "", "", []string{"127.0.0.1", "::1"}))
	if len(ips) != 2 || len(dns) != 3 {
		t.Fatalf("dns %v ips %v", dns, ips)
	}
	tc, err := c.ServingCert(dns, ips)
	if err != nil {
		t.Fatal(err)
	}
	if err := tc.Leaf.VerifyHostname("127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	if err := tc.Leaf.VerifyHostname("::1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ServingCert(nil, nil); err == nil {
		t.Fatal("serving cert without names")
	}
}

func TestServingCertHolderRenewsAtHalfLife(t *testing.T) {
	logs := logtest.Capture(t)
	c, fc := newECCA(t, ca.Options{RootCertTTL: 100 * time.Hour})
	h, err := ca.NewServingCertHolder(c, []string{"istiod.istio-system.svc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := h.GetCertificate(nil)
	lifetime := first.Leaf.NotAfter.Sub(first.Leaf.NotBefore)
	if lifetime != 100*time.Hour+2*time.Minute {
		t.Fatalf("lifetime %v", lifetime)
	}
	if want := first.Leaf.NotBefore.Add(lifetime / 2); !h.RenewAt().Equal(want) {
		t.Fatalf("RenewAt %v, want %v", h.RenewAt(), want)
	}
	fc.Set(h.RenewAt().Add(-time.Second))
	if again := h.Certificate(); again != first {
		t.Fatal("renewed before half of the lifetime")
	}
	fc.Set(h.RenewAt())
	second := h.Certificate()
	if second == first || !second.Leaf.NotBefore.Equal(fc.Now().Add(-2*time.Minute)) {
		t.Fatal("not renewed at half of the lifetime")
	}
	if !second.Leaf.NotAfter.Equal(mustRoot(t, c).NotAfter) {
		t.Fatalf("renewed cert outlives the root: %v", second.Leaf.NotAfter)
	}
	if n := len(logs.Lines("INFO", "Istiod certificates are reloaded")); n != 2 {
		t.Fatalf("%d reload lines", n)
	}
	// past the root's expiry renewal fails: the last certificate keeps serving, and it is logged
	fc.Set(mustRoot(t, c).NotAfter.Add(time.Hour))
	if h.Certificate() != second {
		t.Fatal("lost the certificate on a failed renewal")
	}
	if len(logs.Lines("ERROR", "failed to renew istiod's serving certificate")) == 0 {
		t.Fatalf("failed renewal not logged:\n%s", logs)
	}
}

func TestServingCertHolderRenewsWhenTheRootChanges(t *testing.T) {
	_ = logtest.Capture(t)
	c, fc := newECCA(t, ca.Options{RootCertTTL: 100 * time.Hour})
	h, err := ca.NewServingCertHolder(c, []string{"istiod.istio-system.svc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := h.Certificate()
	fc.Advance(90 * time.Hour) // in the rotation window, past the serving cert's half life too
	if changed, err := c.CheckRootRotation(t.Context()); !changed || err != nil {
		t.Fatalf("rotation: %v %v", changed, err)
	}
	second := h.Certificate()
	if second == first || !second.Leaf.NotAfter.Equal(mustRoot(t, c).NotAfter) {
		t.Fatal("serving cert not re-signed under the new root")
	}
}

// handshake runs a TLS handshake over loopback TCP and returns the server's view.
func handshake(t *testing.T, server *tls.Config, client *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	type result struct {
		st  tls.ConnectionState
		err error
	}
	done := make(chan result, 1)
	go func() {
		raw, err := l.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer raw.Close()
		s := tls.Server(raw, server)
		err = s.Handshake()
		if err == nil {
			_, err = s.Write([]byte{1})
		}
		done <- result{s.ConnectionState(), err}
	}()
	raw, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cl := tls.Client(raw, client)
	cerr := cl.Handshake()
	if cerr == nil {
		var buf [1]byte
		_, cerr = cl.Read(buf[:])
	}
	raw.Close()
	r := <-done
	if r.err != nil {
		return r.st, r.err
	}
	return r.st, cerr
}

func TestServerTLSConfig(t *testing.T) {
	_ = logtest.Capture(t)
	c, fc := newECCA(t, ca.Options{})
	h, err := ca.NewServingCertHolder(c, []string{"istiod.istio-system.svc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := ca.ServerTLSConfig(c, h)
	at := func() time.Time { return fc.Now() }
	base := &tls.Config{RootCAs: c.RootCertPool(), ServerName: "istiod.istio-system.svc", Time: at, NextProtos: []string{"h2"}}
	srv.Time = at

	st, err := handshake(t, srv, base)
	if err != nil {
		t.Fatalf("no client cert: %v", err)
	}
	if len(st.VerifiedChains) != 0 || st.NegotiatedProtocol != "h2" {
		t.Fatalf("chains %d proto %q", len(st.VerifiedChains), st.NegotiatedProtocol)
	}

	key := ecKey(t)
	chain, err := c.Sign(csrPEM(t, key, ""), []string{productpage}, 0)
	if err != nil {
		t.Fatal(err)
	}
	withCert := base.Clone()
	withCert.Certificates = []tls.Certificate{{Certificate: [][]byte{parsePEMCert(t, chain[0]).Raw}, PrivateKey: key}}
	st, err = handshake(t, srv, withCert)
	if err != nil {
		t.Fatalf("workload cert: %v", err)
	}
	if len(st.VerifiedChains) != 1 || st.VerifiedChains[0][0].URIs[0].String() != productpage {
		t.Fatalf("verified chains %v", st.VerifiedChains)
	}

	other, _ := newECCA(t, ca.Options{})
	foreign, err := other.Sign(csrPEM(t, key, ""), []string{productpage}, 0)
	if err != nil {
		t.Fatal(err)
	}
	withForeign := base.Clone()
	withForeign.Certificates = []tls.Certificate{{Certificate: [][]byte{parsePEMCert(t, foreign[0]).Raw}, PrivateKey: key}}
	if _, err := handshake(t, srv, withForeign); err == nil {
		t.Fatal("a certificate of another CA was accepted")
	}

	wrongName := base.Clone()
	wrongName.ServerName = "127.0.0.1"
	if _, err := handshake(t, srv, wrongName); err == nil {
		t.Fatal("127.0.0.1 verified against a cert without IP SANs")
	}
}
