package model

import (
	"encoding/json"
	"maps"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshplane/istiod/pkg/monitoring"
)

// This file holds the problems a snapshot knows of — found by the index
// builds or reported by generators — in the shape of Istio's
// /debug/push_status (metric name → key → status), and the gauges Istio
// exports for them.

// ProxyPushStatus is one problem: the proxy it concerns (empty when it
// concerns the configuration itself) and a message naming the objects.
type ProxyPushStatus struct {
	Proxy   string `json:"proxy,omitempty"`
	Message string `json:"message,omitempty"`
}

// Problem metric names. The pilot_* names are Istio's; the istiod_* name is
// ours, for a problem Istio does not count.
const (
	// MetricDuplicatedDomains: two mesh VirtualServices claim one host for
	// the same namespaces (the older one wins).
	MetricDuplicatedDomains = "pilot_vservice_dup_domain"
	// MetricDuplicatedSubsets: DestinationRules merged for one host define
	// the same subset (the older one wins).
	MetricDuplicatedSubsets = "pilot_destrule_subsets"
	// MetricClusterNoInstances: a cluster (here: a DestinationRule subset)
	// has no endpoint.
	MetricClusterNoInstances = "pilot_eds_no_instances"
	// MetricMissingRouteHost: a VirtualService routes to a host no registry
	// knows.
	MetricMissingRouteHost = "istiod_vservice_missing_host"
	// MetricGatewayServerRejected: a Gateway server a gateway proxy's
	// listeners leave out (a conflict, a duplicate host, a certificate
	// that cannot be served). Istio only counts these, in
	// pilot_total_rejected_configs, and logs them at debug level.
	MetricGatewayServerRejected = "istiod_gateway_server_rejected"
	// MetricSidecarPortSkipped: a Sidecar egress or service port the
	// proxy cannot listen on (privileged for an unprivileged pod, or held
	// by a static or capture listener). Istio only logs it.
	MetricSidecarPortSkipped = "istiod_sidecar_port_skipped"
	// Metrics generators report while building listeners, clusters and
	// endpoints, with Istio's names.
	MetricNoService                   = "pilot_no_ip"
	MetricEndpointNotReady            = "pilot_endpoint_not_ready"
	MetricConflictInboundListener     = "pilot_conflict_inbound_listener"
	MetricConflictOutboundTCPOverHTTP = "pilot_conflict_outbound_listener_tcp_over_current_http"
	MetricConflictOutboundTCPOverTCP  = "pilot_conflict_outbound_listener_tcp_over_current_tcp"
	MetricConflictOutboundHTTPOverTCP = "pilot_conflict_outbound_listener_http_over_current_tcp"
	MetricConflictOutboundHTTPOverTLS = "pilot_conflict_outbound_listener_http_over_https"
	MetricDuplicatedClusters          = "pilot_duplicate_envoy_clusters"
)

var problemGauges = func() map[string]prometheus.Gauge {
	help := map[string]string{
		MetricDuplicatedDomains:           "Virtual services with duplicate domains.",
		MetricDuplicatedSubsets:           "Duplicate subsets across destination rules for the same host.",
		MetricClusterNoInstances:          "Clusters without instances.",
		MetricMissingRouteHost:            "VirtualService routes to hosts that no registry knows.",
		MetricGatewayServerRejected:       "Gateway servers left out of a gateway proxy's listeners.",
		MetricSidecarPortSkipped:          "Outbound ports a sidecar cannot listen on.",
		MetricNoService:                   "Pods not found in the endpoint table, possibly invalid.",
		MetricEndpointNotReady:            "Endpoint found in unready state.",
		MetricConflictInboundListener:     "Number of conflicting inbound listeners.",
		MetricConflictOutboundTCPOverHTTP: "Number of conflicting tcp listeners with current http listener.",
		MetricConflictOutboundTCPOverTCP:  "Number of conflicting tcp listeners with current tcp listener.",
		MetricConflictOutboundHTTPOverTCP: "Number of conflicting wildcard http listeners with current wildcard tcp listener.",
		MetricConflictOutboundHTTPOverTLS: "Number of conflicting HTTP listeners with well known HTTPS ports.",
		MetricDuplicatedClusters:          "Duplicate envoy clusters caused by service entries with the same hostname.",
	}
	out := make(map[string]prometheus.Gauge, len(help))
	for name, h := range help {
		out[name] = prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: h})
	}
	return out
}()

func init() {
	for _, g := range problemGauges {
		monitoring.MustRegister(g)
	}
}

// collectProblems gathers what the indexes found.
func (p *PushContext) collectProblems() map[string]map[string]ProxyPushStatus {
	out := map[string]map[string]ProxyPushStatus{}
	for _, s := range indexSpecs {
		for _, pr := range s.get(p).problems() {
			m := out[pr.metric]
			if m == nil {
				m = map[string]ProxyPushStatus{}
				out[pr.metric] = m
			}
			m[pr.key] = ProxyPushStatus{Message: pr.message}
		}
	}
	return out
}

// AddMetric records a problem a generator found for a proxy (proxyID may be
// empty). Safe for concurrent use.
func (p *PushContext) AddMetric(metric, key, proxyID, message string) {
	p.statusMu.Lock()
	defer p.statusMu.Unlock()
	m := p.status[metric]
	if m == nil {
		m = map[string]ProxyPushStatus{}
		p.status[metric] = m
	}
	m[key] = ProxyPushStatus{Proxy: proxyID, Message: message}
}

// ProxyStatus returns a copy of the problems: metric name → key → status.
func (p *PushContext) ProxyStatus() map[string]map[string]ProxyPushStatus {
	p.statusMu.RLock()
	defer p.statusMu.RUnlock()
	out := make(map[string]map[string]ProxyPushStatus, len(p.status))
	for k, v := range p.status {
		out[k] = maps.Clone(v)
	}
	return out
}

// StatusJSON renders the problems as /debug/push_status does.
func (p *PushContext) StatusJSON() ([]byte, error) {
	if p == nil {
		return []byte("{}"), nil
	}
	return json.MarshalIndent(p.ProxyStatus(), "", "    ")
}

// UpdateMetrics sets each problem gauge to the number of problems of its
// name in this snapshot; call it once the snapshot is current.
func (p *PushContext) UpdateMetrics() {
	p.statusMu.RLock()
	defer p.statusMu.RUnlock()
	for name, g := range problemGauges {
		g.Set(float64(len(p.status[name])))
	}
}

// ProblemMetricNames lists the problem gauges this package exports.
func ProblemMetricNames() []string {
	out := make([]string, 0, len(problemGauges))
	for n := range problemGauges {
		out = append(out, n)
	}
	return out
}
