package xds

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meshplane/istiod/pkg/monitoring"
)

// DefaultSendTimeout bounds one send to a client (PILOT_XDS_SEND_TIMEOUT).
// A client that stops reading fills its flow-control window, and a send to
// it then blocks until TCP gives up, minutes later, holding its push slot
// all along: enough such clients and no push runs at all. Istio 1.31 sends
// without a deadline (its former PILOT_XDS_SEND_TIMEOUT defaulted to none);
// ours ends such a stream after this long, and the proxy reconnects. It is
// far above the time a healthy proxy takes to read the largest config.
const DefaultSendTimeout = 30 * time.Second

// writeTimeouts counts sends that did not complete in time, with Istio's
// name; each ends its stream with DeadlineExceeded.
var writeTimeouts = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "pilot_xds_write_timeout",
	Help: "Pilot XDS response write timeouts.",
})

func init() { monitoring.MustRegister(writeTimeouts) }

// SetSendTimeout bounds each send to a client (0: no bound). Call before
// serving.
func (s *DiscoveryServer) SetSendTimeout(d time.Duration) { s.sendTimeout = d }

// sendWithin runs send, the one send of the stream in flight, and gives up
// after timeout: the stream then ends (its handler returns
// DeadlineExceeded, which cancels the stream and with it the blocked send).
// A send error is counted and returned as it is.
func sendWithin(timeout time.Duration, con *Connection, typeURL string, send func() error) error {
	short := ShortType(typeURL)
	if timeout <= 0 {
		if err := send(); err != nil {
			RecordXDSSendError(short)
			return err
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- send() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			RecordXDSSendError(short)
		}
		return err
	case <-timer.C:
		writeTimeouts.Inc()
		RecordXDSSendError(short)
		adsLog.Warnf("%s: timeout writing %s after %v: the client is not reading; closing the stream", con.ID, short, timeout)
		return status.Errorf(codes.DeadlineExceeded, "timeout sending %s after %v", short, timeout)
	case <-con.done:
		// the stream ended under the send: its error is the stream's
		return <-done
	}
}
