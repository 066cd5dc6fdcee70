package generators

import (
	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pilot/pkg/networking/telemetry"
)

// listenerTelemetry is what the proxy's Telemetry resources configure on
// the listeners of a class: access logs, tracing and the stats filters
// (nil fields fall back to the mesh config, as in Istio).
func listenerTelemetry(push *model.PushContext, proxy *model.Proxy, tel *telemetry.Computed, class telemetry.Class) *listener.Telemetry {
	out := &listener.Telemetry{HTTPStats: tel.HTTPStats(class), TCPStats: tel.TCPStats(class)}
	lookup := telemetry.ClusterLookup(lookupCluster(push))
	if specs, ok := tel.Logging(class.Mode()); ok {
		out.LogsSet = true
		out.Logs = telemetry.AccessLogs(specs, push.Mesh, lookup)
	}
	if spec, ok := tel.Tracing(class.Mode()); ok {
		out.TracingSet = true
		opts := telemetry.TracingOptions{ServiceCluster: proxy.ServiceCluster, Router: proxy.Type == model.Router, Lookup: lookup,
			ProxyConfigSampling: proxyConfig(push, proxy).GetTracing().GetSampling()}
		t, err := telemetry.TracingFromSpec(push.Mesh, telemetryProxy(proxy), spec, opts)
		if err != nil {
			genLog.Debugf("%s: tracing: %v", proxy.ID, err)
		}
		out.Tracing = t
		out.NoRequestIDSampling = t != nil && !spec.UseRequestIDForTraceSampling
	}
	return out
}
