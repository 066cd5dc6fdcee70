package xds

import (
	"context"
	"errors"
	"io"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// serveStream runs one ADS stream of either protocol: a receive goroutine
// feeds requests, and the loop handles them and the connection's pushes, one
// at a time, until the stream ends. The first request must carry the node.
func serveStream[R interface {
	GetNode() *core.Node
	GetTypeUrl() string
	GetErrorDetail() *rpcstatus.Status
}](s *DiscoveryServer, ctx context.Context, recv func() (R, error), delta bool,
	process func(*Connection, R) error, push func(*Connection, *model.PushRequest) error,
) error {
	if err := s.waitForRequestLimit(ctx); err != nil {
		return err
	}
	ids, err := s.authenticate(ctx)
	if err != nil {
		return err
	}
	reqs := make(chan R, 1)
	errc := make(chan error, 1)
	go func() {
		for {
			req, err := recv()
			if err != nil {
				errc <- err
				return
			}
			select {
			case reqs <- req:
			case <-ctx.Done():
				return
			}
		}
	}()
	var con *Connection
	defer func() {
		if con != nil {
			s.removeConnection(con)
			s.observeDisconnect(con)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled {
				return nil
			}
			return err
		case req := <-reqs:
			if s.takeHealth(con, req.GetTypeUrl(), req.GetErrorDetail()) {
				continue
			}
			if con == nil {
				c, err := s.initConnection(ctx, req.GetNode(), delta, ids)
				if err != nil {
					return err
				}
				if err := s.observeConnect(c); err != nil {
					return err
				}
				con = c
				s.addConnection(con)
				adsLog.Infof("new connection %s (delta=%v, %s) from %s", con.ID, delta, con.Proxy().Metadata.IstioVersion, con.peerAddr)
			}
			if err := process(con, req); err != nil {
				return err
			}
		case sig := <-con.pushChan():
			if err := push(con, con.takePending(sig)); err != nil {
				return err
			}
		}
	}
}
