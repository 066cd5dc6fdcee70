package server

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	pb "istio.io/api/security/v1alpha1"

	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/log"
	"github.com/meshplane/istiod/pkg/security"
	"github.com/meshplane/istiod/pkg/security/ca"
)

var (
	serverCaLog = log.RegisterScope("serverca", "Citadel server log")
	securityLog = log.RegisterScope("security", "caller authentication")
)

// ImpersonatedIdentity is the request metadata key of a node agent asking
// for another identity (ztunnel, for the workloads of its node): allowed
// only by a NodeAuthorizer (CA_TRUSTED_NODE_ACCOUNTS), as in Istio.
const ImpersonatedIdentity = "ImpersonatedIdentity"

// CertificateAuthority is what the service needs of a CA; *ca.CA
// implements it. Sign's errors should be *ca.Error for Istio's codes.
type CertificateAuthority interface {
	Sign(csrPEM []byte, identities []string, ttl time.Duration) ([]string, error)
	// RootCertPEM and CertChainPEM feed the expiry gauges at scrape time.
	RootCertPEM() []byte
	CertChainPEM() []byte
}

var _ CertificateAuthority = (*ca.CA)(nil)

// Options configure a Server.
type Options struct {
	CA CertificateAuthority
	// Authenticators are tried in order; the first that succeeds wins
	// (istiod: ClientCertAuthenticator, then KubeJWTAuthenticator).
	Authenticators []security.Authenticator
	// Clock drives citadel_server_root_cert_expiry_seconds (default real).
	Clock clock.Clock
	// NodeAuthorizer allows impersonation (nil: refused).
	NodeAuthorizer NodeAuthorizer
}

// Server implements istio.v1.auth.IstioCertificateService.
type Server struct {
	pb.UnimplementedIstioCertificateServiceServer
	ca             CertificateAuthority
	authenticators []security.Authenticator
	nodeAuthorizer NodeAuthorizer
}

var _ pb.IstioCertificateServiceServer = (*Server)(nil)

// New returns the service. Building it points the root expiry gauges at
// o.CA (the process has one CA).
func New(o Options) *Server {
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	expiry.set(o.CA, o.Clock)
	return &Server{ca: o.CA, authenticators: append([]security.Authenticator(nil), o.Authenticators...), nodeAuthorizer: o.NodeAuthorizer}
}

// Register adds the service to r (the TLS gRPC server).
func (s *Server) Register(r grpc.ServiceRegistrar) {
	pb.RegisterIstioCertificateServiceServer(r, s)
}

// CreateCertificate authenticates the caller, then signs the CSR for the
// caller's identities (never the CSR's own) with validity_duration seconds
// (0: the CA's default). Refusals: Unauthenticated "request authenticate
// failure" (no authenticator succeeded, or not TLS), Unauthenticated
// "request impersonation authentication failure", and the CA's code with
// "CSR signing error (<reason>)" — InvalidArgument for a bad CSR or a TTL
// over the maximum.
func (s *Server) CreateCertificate(ctx context.Context, req *pb.IstioCertificateRequest) (*pb.IstioCertificateResponse, error) {
	csrCount.WithLabelValues().Inc()
	addr := security.PeerAddress(ctx)
	if !isTLS(ctx) {
		authnErrorCount.WithLabelValues().Inc()
		securityLog.Errorf("Failed to authenticate client from %s: the connection is not TLS", addr)
		return nil, status.Error(codes.Unauthenticated, "request authenticate failure")
	}
	caller, err := security.Authenticate(ctx, s.authenticators) // logs the reasons
	if err != nil || caller == nil {
		authnErrorCount.WithLabelValues().Inc()
		return nil, status.Error(codes.Unauthenticated, "request authenticate failure")
	}
	sans := caller.Identities
	if id := req.GetMetadata().GetFields()[ImpersonatedIdentity].GetStringValue(); id != "" {
		err := errNoNodeAuthorizer
		if s.nodeAuthorizer != nil {
			if err = s.nodeAuthorizer.Authorize(caller.KubernetesInfo, id); err != nil {
				err = fmt.Errorf("impersonation failed for identity %s, error: %v", id, err)
			}
		}
		if err != nil {
			// an opaque answer; the reason is logged
			authnErrorCount.WithLabelValues().Inc()
			serverCaLog.Warn(err.Error(), "client", addr)
			return nil, status.Error(codes.Unauthenticated, "request impersonation authentication failure")
		}
		sans = []string{id} // the node may: the certificate is the workload's
	}
	ttl := requestedTTL(req.GetValidityDuration())
	serverCaLog.Debug("generating a certificate", "client", addr, "sans", sans, "ttl", ttl.String())
	chain, err := s.ca.Sign([]byte(req.GetCsr()), sans, ttl)
	if err != nil {
		label, code := "UNKNOWN", codes.Internal
		if e, ok := ca.AsError(err); ok {
			label, code = e.Label(), e.Code()
		}
		certSignErrorCount.WithLabelValues(label).Inc()
		serverCaLog.Error("CSR signing error: "+err.Error(), "client", addr, "sans", sans)
		return nil, status.Errorf(code, "CSR signing error (%v)", err)
	}
	successCount.WithLabelValues().Inc()
	serverCaLog.Debug("CSR successfully signed", "client", addr, "sans", sans)
	return &pb.IstioCertificateResponse{CertChain: chain}, nil
}

// requestedTTL converts validity_duration seconds, saturating instead of
// overflowing (an overflow would wrap to a negative, i.e. default, TTL).
func requestedTTL(seconds int64) time.Duration {
	if seconds > math.MaxInt64/int64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(seconds) * time.Second
}

func isTLS(ctx context.Context) bool {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return false
	}
	_, ok = p.AuthInfo.(credentials.TLSInfo)
	return ok
}

func parseFirstCert(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}
