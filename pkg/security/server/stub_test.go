package server_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	pb "istio.io/api/security/v1alpha1"

	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/log/logtest"
	"github.com/meshplane/istiod/pkg/security"
	"github.com/meshplane/istiod/pkg/security/ca"
	"github.com/meshplane/istiod/pkg/security/server"
)

type stubCA struct {
	err         error
	root, chain []byte
	gotIDs      []string
	gotTTL      time.Duration
}

func (s *stubCA) Sign(_ []byte, ids []string, ttl time.Duration) ([]string, error) {
	s.gotIDs, s.gotTTL = ids, ttl
	if s.err != nil {
		return nil, s.err
	}
	return []string{"leaf\n", "root\n"}, nil
}
func (s *stubCA) RootCertPEM() []byte  { return s.root }
func (s *stubCA) CertChainPEM() []byte { return s.chain }

type okAuth struct{}

func (okAuth) Authenticate(context.Context) (*security.Caller, error) {
	return &security.Caller{Identities: []string{productpage}}, nil
}
func (okAuth) AuthenticatorType() string { return "ok" }

func tlsCtx() context.Context {
	return peer.NewContext(context.Background(), &peer.Peer{
		Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}, AuthInfo: credentials.TLSInfo{State: tls.ConnectionState{}},
	})
}

func TestSignErrorsMapToCodes(t *testing.T) {
	_ = logtest.Capture(t)
	stub := &stubCA{}
	s := server.New(server.Options{CA: stub, Authenticators: []security.Authenticator{okAuth{}}})
	_, before := scrape(t)

	resp, err := s.CreateCertificate(tlsCtx(), &pb.IstioCertificateRequest{Csr: "x", ValidityDuration: 7})
	if err != nil || len(resp.CertChain) != 2 || stub.gotTTL != 7*time.Second || stub.gotIDs[0] != productpage {
		t.Fatalf("%v %v ttl=%v ids=%v", resp, err, stub.gotTTL, stub.gotIDs)
	}
	stub.err = errors.New("boom")
	_, err = s.CreateCertificate(tlsCtx(), &pb.IstioCertificateRequest{Csr: "x"})
	wantStatus(t, err, codes.Internal, "CSR signing error (boom)")
	stub.err = &ca.Error{Type: ca.CANotReady, Err: errors.New("Istio CA is not ready")}
	_, err = s.CreateCertificate(tlsCtx(), &pb.IstioCertificateRequest{Csr: "x"})
	wantStatus(t, err, codes.Internal, "CSR signing error (Istio CA is not ready)")

	_, after := scrape(t)
	for k, want := range map[string]float64{
		`citadel_server_csr_sign_err_count{error="UNKNOWN"}`:      1,
		`citadel_server_csr_sign_err_count{error="CA_NOT_READY"}`: 1,
	} {
		if got := after[k] - before[k]; got != want {
			t.Errorf("%s grew by %v, want %v", k, got, want)
		}
	}
	// a stub without root reports no expiry
	if _, ok := after["citadel_server_root_cert_expiry_timestamp"]; ok {
		t.Error("root expiry reported without a root")
	}
}

func TestCertChainExpiryIsReportedForAPluggedInChain(t *testing.T) {
	_ = logtest.Capture(t)
	fc := clock.NewFake(time.Now())
	rc, err := ca.New(context.Background(), ca.Options{KeyType: ca.KeyECDSAP256, Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	// pretend the root is also an intermediate chain
	stub := &stubCA{root: rc.RootCertPEM(), chain: rc.RootCertPEM()}
	server.New(server.Options{CA: stub, Clock: fc})
	_, m := scrape(t)
	exp := rc.RootCerts()[0].NotAfter
	if m["citadel_server_cert_chain_expiry_timestamp"] != float64(exp.Unix()) || m["citadel_server_cert_chain_expiry_seconds"] != exp.Sub(fc.Now()).Seconds() {
		t.Fatalf("chain expiry %v %v", m["citadel_server_cert_chain_expiry_timestamp"], m["citadel_server_cert_chain_expiry_seconds"])
	}
}
