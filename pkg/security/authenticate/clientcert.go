package authenticate

import (
	"context"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/meshplane/istiod/pkg/security"
)

// ClientCertAuthenticatorType names the authenticator in logs.
const ClientCertAuthenticatorType = "ClientCertAuthenticator"

// ClientCertAuthenticator authenticates a caller by its TLS client
// certificate. It does not verify the chain itself: the TLS server must
// have (tls.VerifyClientCertIfGiven with the mesh roots, see
// ca.ServerTLSConfig), so only a verified chain counts. The identities are
// the leaf's URI SANs.
type ClientCertAuthenticator struct{}

var _ security.Authenticator = ClientCertAuthenticator{}

// NewClientCertAuthenticator returns the authenticator.
func NewClientCertAuthenticator() ClientCertAuthenticator { return ClientCertAuthenticator{} }

// AuthenticatorType implements security.Authenticator.
func (ClientCertAuthenticator) AuthenticatorType() string { return ClientCertAuthenticatorType }

var oidSubjectAltName = asn1.ObjectIdentifier{2, 5, 29, 17}

// Authenticate implements security.Authenticator.
func (ClientCertAuthenticator) Authenticate(ctx context.Context) (*security.Caller, error) {
	p, ok := peer.FromContext(ctx)
	if !ok || p.AuthInfo == nil {
		return nil, errors.New("no client certificate is presented")
	}
	if t := p.AuthInfo.AuthType(); t != "tls" {
		return nil, fmt.Errorf("unsupported auth type: %q", t)
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return nil, fmt.Errorf("unsupported auth info %T", p.AuthInfo)
	}
	chains := info.State.VerifiedChains
	if len(chains) == 0 || len(chains[0]) == 0 {
		return nil, errors.New("no verified chain is found")
	}
	ids, err := uriSANs(chains[0][0])
	if err != nil {
		return nil, err
	}
	return &security.Caller{AuthSource: security.AuthSourceClientCertificate, Identities: ids}, nil
}

func uriSANs(c *x509.Certificate) ([]string, error) {
	hasSAN := false
	for _, e := range c.Extensions {
		if e.Id.Equal(oidSubjectAltName) {
			hasSAN = true
		}
	}
	if !hasSAN {
		return nil, errors.New("the SAN extension does not exist")
	}
	ids := make([]string, 0, len(c.URIs))
	for _, u := range c.URIs {
		ids = append(ids, u.String())
	}
	if len(ids) == 0 {
		return nil, errors.New("the client certificate has no URI SAN")
	}
	return ids, nil
}
