package xds

import (
	"context"
	"fmt"
	"net"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/security"
)

// AuthenticateFunc identifies the caller of a stream from its context (the
// TLS peer, the bearer token): the SPIFFE identities it proved, or an error
// naming why none was accepted.
type AuthenticateFunc func(ctx context.Context) ([]string, error)

// SetAuthenticator makes streams over TLS authenticate with auth (client
// certificate, then Kubernetes token, as bootstrap composes it), and binds
// each connection to its identity: a node must claim the namespace (and
// service account, when it names one) of an identity it proved. Streams
// without TLS (the plaintext port) are not authenticated, as Istio's
// istiod does it; they cannot use the debug types. Call before serving.
func (s *DiscoveryServer) SetAuthenticator(auth AuthenticateFunc) { s.auth = auth }

// authenticate returns the caller's identities: nil for a stream without
// TLS, an Unauthenticated error when a TLS stream proves none.
func (s *DiscoveryServer) authenticate(ctx context.Context) ([]string, error) {
	if s.auth == nil || !overTLS(ctx) {
		return nil, nil
	}
	ids, err := s.auth(ctx)
	if err != nil || len(ids) == 0 {
		p, _ := peer.FromContext(ctx)
		s.recordAuthFailure(p, err)
		return nil, status.Error(codes.Unauthenticated, "authentication failure")
	}
	return ids, nil
}

func overTLS(ctx context.Context) bool {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return false
	}
	_, tls := p.AuthInfo.(credentials.TLSInfo)
	return tls
}

func (s *DiscoveryServer) recordAuthFailure(p *peer.Peer, err error) {
	xdsAuthFailures.WithLabelValues("authentication").Inc()
	host := "unknown peer"
	if p != nil && p.Addr != nil {
		host = p.Addr.String()
		if h, _, splitErr := net.SplitHostPort(host); splitErr == nil {
			host = h
		}
	}
	if s.refusals.firstFor(host, fmt.Sprint(err)) {
		adsLog.Warnf("refused xDS stream from %s: authentication failure: %v", host, err)
	}
}

// refusalLog remembers the last refusal reason per peer host, so that a
// proxy retrying with the same bad credential is logged once, and again
// when the reason changes. It forgets everything past maxRefusalPeers.

const maxRefusalPeers = 10000

type refusalLog struct {
	mu   sync.Mutex
	seen map[string]string
}

func (r *refusalLog) firstFor(host, reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[host] == reason {
		return false
	}
	if r.seen == nil || len(r.seen) >= maxRefusalPeers {
		r.seen = map[string]string{}
	}
	r.seen[host] = reason
	return true
}

// authorize checks that one of the caller's identities is the proxy's own:
// same namespace, and same service account when the node names one. The
// matching identity becomes the proxy's VerifiedIdentity.
func authorize(proxy *model.Proxy, ids []string) error {
	sa := ""
	if proxy.Metadata != nil {
		sa = proxy.Metadata.ServiceAccount
	}
	for _, id := range ids {
		_, ns, idSA, err := security.ParseSpiffeID(id)
		if err != nil {
			continue
		}
		if proxy.ConfigNamespace != "" && ns != proxy.ConfigNamespace {
			continue
		}
		if sa != "" && idSA != sa {
			continue
		}
		proxy.VerifiedIdentity = &model.Identity{Namespace: ns, ServiceAccount: idSA}
		return nil
	}
	xdsAuthFailures.WithLabelValues("authorization").Inc()
	adsLog.Warnf("refused xDS stream of %s: no identities (%v) matched %s/%s", proxy.ID, ids, proxy.ConfigNamespace, sa)
	return status.Errorf(codes.PermissionDenied, "authorization failed: no identities (%v) matched %s/%s", ids, proxy.ConfigNamespace, sa)
}
