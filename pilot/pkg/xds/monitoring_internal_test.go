package xds

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Receive errors are classified as Istio classifies them: normal ends of a
// stream are not internal errors.
func TestUnexpectedRecvError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{io.EOF, false},
		{fmt.Errorf("wrapped: %w", io.EOF), false},
		{status.Error(codes.Canceled, "context canceled"), false},
		{status.Error(codes.DeadlineExceeded, "deadline"), false},
		{status.Error(codes.Unavailable, "transport is closing"), false},
		{status.Error(codes.Unavailable, "client disconnected"), false},
		{status.Error(codes.Unavailable, "error reading from server: EOF"), false},
		{errors.New("stream terminated by RST_STREAM with error code: NO_ERROR"), false},
		{errors.New("received prior goaway: code: NO_ERROR"), false},
		{status.Error(codes.Unavailable, "connection refused"), true},
		{status.Error(codes.ResourceExhausted, "grpc: received message larger than max"), true},
		{status.Error(codes.Internal, "grpc: failed to unmarshal the received message"), true},
		{errors.New("something else"), true},
	} {
		if got := unexpectedRecvError(tc.err); got != tc.want {
			t.Errorf("unexpectedRecvError(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// countRecvErrors counts unexpected errors only, and passes everything on.
func TestCountRecvErrors(t *testing.T) {
	c := totalXDSInternalErrors.WithLabelValues()
	before := testutil.ToFloat64(c)
	errs := []error{nil, io.EOF, status.Error(codes.Internal, "bad frame")}
	for i, want := range errs {
		recv := countRecvErrors(func() (int, error) { return i, want })
		if got, err := recv(); got != i || err != want {
			t.Errorf("recv = %d, %v; want %d, %v", got, err, i, want)
		}
	}
	if d := testutil.ToFloat64(c) - before; d != 1 {
		t.Errorf("pilot_total_xds_internal_errors grew by %v, want 1", d)
	}
}

// Removing a connection the server does not hold is an internal error (as
// in Istio), and leaves the connection gauges alone.
func TestRemoveUnknownConnection(t *testing.T) {
	s := NewDiscoveryServer()
	c := totalXDSInternalErrors.WithLabelValues()
	before := testutil.ToFloat64(c)
	s.removeConnection(&Connection{ID: "never-added"}) // its proxy is unset: touching it would panic
	if d := testutil.ToFloat64(c) - before; d != 1 {
		t.Errorf("pilot_total_xds_internal_errors grew by %v, want 1", d)
	}
}

// Types without a per-node gauge are counted in pilot_total_xds_rejects
// only.
func TestRejectDetailOtherTypes(t *testing.T) {
	recordRejectDetail("type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret", "p.ns", &statuspb.Status{Code: 13})
	for name, g := range map[string]interface {
		DeleteLabelValues(...string) bool
	}{"cds": cdsReject, "eds": edsReject, "lds": ldsReject, "rds": rdsReject} {
		if g.DeleteLabelValues("p.ns", "Internal") {
			t.Errorf("an SDS rejection set pilot_xds_%s_reject", name)
		}
	}
	recordRejectDetail(ClusterType, "p.ns", &statuspb.Status{Code: 13})
	if v := testutil.ToFloat64(cdsReject.WithLabelValues("p.ns", "Internal")); v != 1 {
		t.Errorf("pilot_xds_cds_reject{node=p.ns,err=Internal} = %v, want 1", v)
	}
	cdsReject.DeleteLabelValues("p.ns", "Internal")
}
