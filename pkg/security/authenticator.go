package security

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/peer"

	"github.com/meshplane/istiod/pkg/log"
)

var scope = log.RegisterScope("security", "caller authentication")

// Authenticator recognises the caller of a gRPC call from what ctx carries
// (the peer's TLS state, the incoming metadata). It returns a Caller with at
// least one identity, or an error saying why the call is not its kind of
// proof. Implementations are safe for concurrent use.
type Authenticator interface {
	Authenticate(ctx context.Context) (*Caller, error)
	// AuthenticatorType names the authenticator in logs
	// (ClientCertAuthenticator, KubeJWTAuthenticator).
	AuthenticatorType() string
}

// AuthenticationError lists why each authenticator refused, in order.
type AuthenticationError struct {
	// Failures are "Authenticator <type>: <reason>" for each authenticator.
	Failures []string
}

func (e *AuthenticationError) Error() string {
	if len(e.Failures) == 0 {
		return "no authenticator is configured"
	}
	return strings.Join(e.Failures, "; ")
}

// Authenticate tries the authenticators in order and returns the first
// caller with at least one identity. When none succeeds it logs one error
// line on the "security" scope, as Istio does ("Failed to authenticate
// client from <peer>: Authenticator A: ...; Authenticator B: ..."), and
// returns an *AuthenticationError. Whether a plaintext connection should be
// authenticated at all is the caller's decision.
func Authenticate(ctx context.Context, authenticators []Authenticator) (*Caller, error) {
	aerr := &AuthenticationError{}
	for _, a := range authenticators {
		c, err := a.Authenticate(ctx)
		if err == nil && c != nil && len(c.Identities) > 0 {
			scope.Debugf("Authentication successful through auth source %v", c.AuthSource)
			return c, nil
		}
		if err == nil {
			err = fmt.Errorf("no identity")
		}
		aerr.Failures = append(aerr.Failures, fmt.Sprintf("Authenticator %s: %v", a.AuthenticatorType(), err))
	}
	scope.Errorf("Failed to authenticate client from %s: %s", PeerAddress(ctx), aerr.Error())
	return nil, aerr
}

// PeerAddress is the remote address of the gRPC peer in ctx, or "unknown".
func PeerAddress(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return "unknown"
}
