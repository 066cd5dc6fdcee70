package xdstest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
)

// TLSServer is a Server whose DiscoveryServer also listens over TLS, with a
// throwaway self-signed certificate for "istiod.istio-system.svc".
type TLSServer struct {
	*Server
	TLSAddr string
	roots   *x509.CertPool
}

// NewTLSServer serves one DiscoveryServer on two loopback ports: Addr in
// plaintext and TLSAddr over TLS (client certificates requested, not
// required), as istiod's 15010 and 15012 do.
func NewTLSServer(t testing.TB) *TLSServer {
	t.Helper()
	s := NewServer(t)
	cert, roots := selfSigned(t, "istiod.istio-system.svc")
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert},
		ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12})))
	s.DS.Register(g)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(l) }()
	t.Cleanup(g.Stop)
	return &TLSServer{Server: s, TLSAddr: l.Addr().String(), roots: roots}
}

// DialOptions are a client's options for TLSAddr, sending token (when not
// empty) as a bearer token.
func (s *TLSServer) DialOptions(token string) []grpc.DialOption {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		RootCAs: s.roots, ServerName: "istiod.istio-system.svc", MinVersion: tls.VersionTLS12}))}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(token)))
	}
	return opts
}

// TokenIdentity is a test authenticator: a bearer token "<ns>/<sa>" is
// that identity (spiffe://cluster.local/ns/<ns>/sa/<sa>); no token is an
// error.
func TokenIdentity(ctx context.Context) ([]string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if tok, ok := strings.CutPrefix(v, "Bearer "); ok {
			ns, sa, _ := strings.Cut(tok, "/")
			return []string{"spiffe://cluster.local/ns/" + ns + "/sa/" + sa}, nil
		}
	}
	return nil, errors.New("no bearer token")
}

type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return true }

func selfSigned(t testing.TB, dnsName string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{Organization: []string{"test"}},
		DNSNames: []string{dnsName}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
