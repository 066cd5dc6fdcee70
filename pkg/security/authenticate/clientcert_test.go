package authenticate_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/url"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/meshplane/istiod/pkg/security"
	"github.com/meshplane/istiod/pkg/security/authenticate"
)

func certWith(t *testing.T, uris []string, dns []string) *x509.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), DNSNames: dns}
	if len(uris) == 0 && len(dns) == 0 {
		tmpl.Subject = pkix.Name{CommonName: "no-san"}
	}
	for _, u := range uris {
		pu, _ := url.Parse(u)
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

func tlsPeer(chains [][]*x509.Certificate) context.Context {
	return peer.NewContext(context.Background(), &peer.Peer{
		Addr:     &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1},
		AuthInfo: credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: chains}},
	})
}

func TestClientCertAuthenticator(t *testing.T) {
	a := authenticate.NewClientCertAuthenticator()
	if a.AuthenticatorType() != "ClientCertAuthenticator" {
		t.Fatal(a.AuthenticatorType())
	}
	id := "spiffe://cluster.local/ns/bookinfo/sa/bookinfo-productpage"
	leaf := certWith(t, []string{id, "spiffe://cluster.local/ns/bookinfo/sa/second"}, []string{"dns.example"})
	c, err := a.Authenticate(tlsPeer([][]*x509.Certificate{{leaf}}))
	if err != nil {
		t.Fatal(err)
	}
	if c.AuthSource != security.AuthSourceClientCertificate || !slices.Equal(c.Identities, []string{id, "spiffe://cluster.local/ns/bookinfo/sa/second"}) {
		t.Fatalf("caller %+v", c)
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"no peer", context.Background(), "no client certificate is presented"},
		{"plaintext", peer.NewContext(context.Background(), &peer.Peer{AuthInfo: plainInfo{}}), `unsupported auth type: "insecure"`},
		{"peer without auth info", peer.NewContext(context.Background(), &peer.Peer{}), "no client certificate is presented"},
		{"TLS without client cert", tlsPeer(nil), "no verified chain is found"},
		{"empty chain", tlsPeer([][]*x509.Certificate{{}}), "no verified chain is found"},
		{"no SAN", tlsPeer([][]*x509.Certificate{{certWith(t, nil, nil)}}), "the SAN extension does not exist"},
		{"DNS SANs only", tlsPeer([][]*x509.Certificate{{certWith(t, nil, []string{"istiod.istio-system.svc"})}}), "the client certificate has no URI SAN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := a.Authenticate(tc.ctx)
			if err == nil || err.Error() != tc.want || c != nil {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// plainInfo is the AuthInfo of a plaintext connection.
type plainInfo struct{}

func (plainInfo) AuthType() string { return "insecure" }
