package bootstrap

import (
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/meshplane/istiod/pilot/pkg/xds"
)

// newGRPCServer builds the plaintext xDS server with the keepalive settings:
// connections are closed after MaxServerConnectionAge (plus grace) so proxies
// rebalance across istiod replicas. Connections are mostly idle between
// pushes, so the DiscoveryServer's GRPCServerOptions keep what each holds small (pooled
// write buffers, a small read buffer, responses framed around the cached
// resources rather than copied).
func newGRPCServer(ds *xds.DiscoveryServer, k KeepaliveOptions, extra ...grpc.ServerOption) *grpc.Server {
	extra = append(ds.GRPCServerOptions(), extra...)
	return grpc.NewServer(append([]grpc.ServerOption{
		grpc.MaxConcurrentStreams(100000),
		grpc.MaxRecvMsgSize(4 << 20),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time:                  k.Time,
			Timeout:               k.Timeout,
			MaxConnectionAge:      k.MaxServerConnectionAge,
			MaxConnectionAgeGrace: k.MaxServerConnectionAgeGrace,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 15 * time.Second, PermitWithoutStream: true}),
	}, extra...)...)
}

// serveGRPC binds addr and serves g until Shutdown.
func (s *Server) serveGRPC(g *grpc.Server, addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", addr, err)
	}
	scope.Infof("xDS gRPC server listening on %s", l.Addr())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := g.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			scope.Errorf("gRPC server: %v", err)
		}
	}()
	return l, nil
}

// stopGRPC drains streams for up to d, then closes whatever remains.
func stopGRPC(g *grpc.Server, d time.Duration) {
	done := make(chan struct{})
	go func() {
		g.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		g.Stop()
	}
}
