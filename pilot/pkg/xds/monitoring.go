package xds

import (
	"errors"
	"io"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meshplane/istiod/pkg/monitoring"
	"github.com/meshplane/istiod/pkg/version"
)

// The NACK and internal-error metrics Istio's pilot dashboard and the
// usual istiod alerts read, with Istio's names, types, labels and help.
var (
	// totalXDSInternalErrors counts streams that ended on a receive error
	// that is not a normal disconnect, and connections removed that were
	// not registered. A vector without labels: as in Istio, the series
	// appears with the first error.
	totalXDSInternalErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pilot_total_xds_internal_errors",
		Help: "Total number of internal XDS errors in pilot.",
	}, nil)

	// The per-node rejection gauges Istio keeps beside
	// pilot_total_xds_rejects: a rejection sets {node, err} to 1 (Istio
	// records 1 on a last-value gauge; it is never reset).
	cdsReject = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pilot_xds_cds_reject",
		Help: "Pilot rejected CDS configs.",
	}, []string{"node", "err"})
	edsReject = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pilot_xds_eds_reject",
		Help: "Pilot rejected EDS.",
	}, []string{"node", "err"})
	ldsReject = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pilot_xds_lds_reject",
		Help: "Pilot rejected LDS.",
	}, []string{"node", "err"})
	rdsReject = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pilot_xds_rds_reject",
		Help: "Pilot rejected RDS.",
	}, []string{"node", "err"})
)

func init() {
	monitoring.MustRegister(totalXDSInternalErrors, cdsReject, edsReject, ldsReject, rdsReject)
	// the discovery server is Istio's "pilot" component (istio_build)
	version.RecordComponentBuildTag("pilot")
}

// recordRejectDetail sets the per-node rejection gauge of a NACKed type:
// node is the proxy's ID (pod.namespace), err the name of the gRPC code of
// the error detail ("InvalidArgument", "Internal", ...). Only CDS, EDS, LDS
// and RDS have one; every type is counted in pilot_total_xds_rejects (by
// recordNACK).
func recordRejectDetail(typeURL, node string, detail *statuspb.Status) {
	var g *prometheus.GaugeVec
	switch typeURL {
	case ClusterType:
		g = cdsReject
	case EndpointType:
		g = edsReject
	case ListenerType:
		g = ldsReject
	case RouteType:
		g = rdsReject
	default:
		return
	}
	g.WithLabelValues(node, codes.Code(detail.GetCode()).String()).Set(1)
}

// countRecvErrors wraps a stream's receive so that an error other than a
// normal end of the stream counts as an internal error.
func countRecvErrors[R any](recv func() (R, error)) func() (R, error) {
	return func() (R, error) {
		r, err := recv()
		if err != nil && unexpectedRecvError(err) {
			totalXDSInternalErrors.WithLabelValues().Inc()
			adsLog.Warnf("xDS stream ended on a receive error: %v", err)
		}
		return r, err
	}
}

// expectedRecvMessages are the Unavailable errors of a peer going away.
var expectedRecvMessages = []string{"client disconnected", "error reading from server: EOF", "transport is closing"}

// unexpectedRecvError tells a receive error worth counting from the end of
// a stream, as Istio classifies them: the client closing its send side
// (EOF), the stream cancelled or past its deadline, the transport going away
// or reset without an error are normal; anything else (a message over the
// size limit, a frame that does not decode, ...) is not.
func unexpectedRecvError(err error) bool {
	if errors.Is(err, io.EOF) {
		return false
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.Canceled, codes.DeadlineExceeded:
			return false
		case codes.Unavailable:
			for _, m := range expectedRecvMessages {
				if strings.Contains(s.Message(), m) {
					return false
				}
			}
		}
	}
	msg := err.Error()
	return !strings.Contains(msg, "stream terminated by RST_STREAM with error code: NO_ERROR") &&
		!strings.Contains(msg, "received prior goaway: code: NO_ERROR")
}
