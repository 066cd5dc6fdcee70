package server

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/monitoring"
)

// Istio's citadel_server_* metrics (security/pkg/server/ca/monitoring.go),
// with its names, help and labels. Counters carry no _total suffix and, as
// in Istio, appear only once they have been incremented (a vector without
// labels has no series until first use).
var (
	csrCount = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "citadel_server_csr_count",
		Help: "The number of CSRs received by Citadel server.",
	}, nil)
	authnErrorCount = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "citadel_server_authentication_failure_count",
		Help: "The number of authentication failures.",
	}, nil)
	csrParsingErrorCount = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "citadel_server_csr_parsing_err_count",
		Help: "The number of errors occurred when parsing the CSR.",
	}, nil)
	idExtractionErrorCount = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "citadel_server_id_extraction_err_count",
		Help: "The number of errors occurred when extracting the ID from CSR.",
	}, nil)
	certSignErrorCount = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "citadel_server_csr_sign_err_count",
		Help: "The number of errors occurred when signing the CSR.",
	}, []string{"error"})
	successCount = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "citadel_server_success_cert_issuance_count",
		Help: "The number of certificates issuances that have succeeded.",
	}, nil)

	expiry = &expiryCollector{
		rootTimestamp: prometheus.NewDesc("citadel_server_root_cert_expiry_timestamp",
			"The unix timestamp, in seconds, when the root cert will expire.", nil, nil),
		rootSeconds: prometheus.NewDesc("citadel_server_root_cert_expiry_seconds",
			"The time remaining, in seconds, before the root cert will expire. "+
				"A negative value indicates the cert is expired.", nil, nil),
		chainTimestamp: prometheus.NewDesc("citadel_server_cert_chain_expiry_timestamp",
			"The unix timestamp, in seconds, when Istio generated cert chain will expire.", nil, nil),
		chainSeconds: prometheus.NewDesc("citadel_server_cert_chain_expiry_seconds",
			"The time remaining, in seconds, before the Istio Generated cert chain will expire. "+
				"A negative value indicates the cert is expired.", nil, nil),
	}
)

func init() {
	monitoring.MustRegister(csrCount, authnErrorCount, csrParsingErrorCount, idExtractionErrorCount,
		certSignErrorCount, successCount, expiry)
}

// expiryCollector reports the expiry of the current root (and of the
// plugged-in cert chain's first certificate) at scrape time, so a rotated
// root is reported without anyone recording it. Nothing is reported until
// a Server is built.
type expiryCollector struct {
	rootTimestamp, rootSeconds, chainTimestamp, chainSeconds *prometheus.Desc

	mu    sync.Mutex
	ca    CertificateAuthority
	clock clock.Clock
}

func (e *expiryCollector) set(ca CertificateAuthority, clk clock.Clock) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ca, e.clock = ca, clk
}

func (e *expiryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- e.rootTimestamp
	ch <- e.rootSeconds
	ch <- e.chainTimestamp
	ch <- e.chainSeconds
}

func (e *expiryCollector) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	ca, clk := e.ca, e.clock
	e.mu.Unlock()
	if ca == nil {
		return
	}
	now := clk.Now()
	emit := func(pemBytes []byte, ts, secs *prometheus.Desc) {
		notAfter, ok := firstNotAfter(pemBytes)
		if !ok {
			return
		}
		ch <- prometheus.MustNewConstMetric(ts, prometheus.GaugeValue, float64(notAfter.Unix()))
		ch <- prometheus.MustNewConstMetric(secs, prometheus.GaugeValue, notAfter.Sub(now).Seconds())
	}
	emit(ca.RootCertPEM(), e.rootTimestamp, e.rootSeconds)
	emit(ca.CertChainPEM(), e.chainTimestamp, e.chainSeconds)
}

func firstNotAfter(pemBytes []byte) (time.Time, bool) {
	if len(pemBytes) == 0 {
		return time.Time{}, false
	}
	c, err := parseFirstCert(pemBytes)
	if err != nil {
		return time.Time{}, false
	}
	return c.NotAfter, true
}
