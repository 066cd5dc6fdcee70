package debug

import (
	"net/http"
)

// ProxyReportSource reports on the connected proxy with an ID
// (<pod>.<namespace>): any JSON-marshalable value, built for the caller.
// connected is false when no such proxy is connected; the report is nil
// when there is nothing to report from yet (no snapshot). Bootstrap wires
// the generators' reports here, so that this package needs neither the
// generators nor the policy translation.
type ProxyReportSource func(proxyID string) (report any, connected bool)

// AddPolicyz serves /debug/policyz?proxyID=<pod>.<namespace> from src:
// the effective mTLS mode of each inbound port and the
// PeerAuthentications that decided it, the RequestAuthentications and
// AuthorizationPolicies that apply in evaluation order, the RBAC rules they
// became, and the translation warnings. (Istio's /debug/authorizationz
// lists the policies by namespace, and is served so.) Call it before
// Install; a nil src serves nothing. Like every endpoint but config_dump,
// edsz and ndsz, it is served to loopback callers and to istiod's own
// namespace only.
func (d *Debug) AddPolicyz(src ProxyReportSource) {
	d.addProxyReport("policyz", "a proxy's mTLS modes, authentication and authorization policies and their RBAC rules (?proxyID=<pod>.<namespace>)", src)
}

// AddProxyTelemetryz serves /debug/proxytelemetryz?proxyID=<pod>.<namespace>
// from src: the telemetry a proxy's Telemetry resources give it per
// listener class (access logs, tracing, metrics), with the resource each
// setting came from. (Istio's /debug/telemetryz lists the Telemetry
// resources, and is served so.) Served like policyz.
func (d *Debug) AddProxyTelemetryz(src ProxyReportSource) {
	d.addProxyReport("proxytelemetryz", "a proxy's computed telemetry per listener class and where each setting came from (?proxyID=<pod>.<namespace>)", src)
}

// addProxyReport serves a report about one connected proxy.
func (d *Debug) addProxyReport(name, help string, src ProxyReportSource) {
	if src == nil {
		return
	}
	d.add(name, help,
		func(w http.ResponseWriter, r *http.Request) {
			id, ok := proxyID(w, r)
			if !ok {
				return
			}
			report, connected := src(id)
			switch {
			case !connected:
				http.Error(w, "proxy "+id+" is not connected", http.StatusNotFound)
			case report == nil:
				http.Error(w, "no push context yet", http.StatusServiceUnavailable)
			default:
				writeJSON(w, r, report)
			}
		})
}
