package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/meshplane/istiod/pkg/monitoring"
)

// Istio's metric names and labels.
var (
	metricPassed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "galley_validation_passed",
		Help: "Resource is valid",
	}, []string{"group", "version", "resource"})
	metricFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "galley_validation_failed",
		Help: "Resource validation failed",
	}, []string{"group", "version", "resource", "reason"})
	metricHTTPError = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "galley_validation_http_error",
		Help: "Resource validation http serve errors",
	}, []string{"status"})
)

func init() {
	monitoring.MustRegister(metricPassed, metricFailed, metricHTTPError)
}

const (
	reasonUnsupportedOperation = "unsupported_operation"
	reasonYamlDecodeError      = "yaml_decode_error"
	reasonUnknownType          = "unknown_type"
	reasonCRDConversionError   = "crd_conversion_error"
	reasonInvalidConfig        = "invalid_resource"
)

// reportFailed counts a failure; dry runs are not counted, as in Istio.
func reportFailed(req *admissionv1.AdmissionRequest, reason string, dryRun bool) {
	if dryRun {
		return
	}
	metricFailed.WithLabelValues(req.Resource.Group, req.Resource.Version, req.Resource.Resource, reason).Inc()
}

func reportPassed(req *admissionv1.AdmissionRequest) {
	metricPassed.WithLabelValues(req.Resource.Group, req.Resource.Version, req.Resource.Resource).Inc()
}

func reportHTTPError(status int) {
	metricHTTPError.WithLabelValues(strconv.Itoa(status)).Inc()
}
