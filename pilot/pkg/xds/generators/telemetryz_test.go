package generators_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds/generators"
	"github.com/meshplane/istiod/tests/refmesh"
)

// /debug/telemetryz explains the extensions reference's reviews sidecar:
// the three Telemetry resources in order, no server access log because
// bookinfo-logs disabled it, tracing off because reviews-tracing turned
// span reporting off (the provider and sampling coming from the root), and
// the client metrics override.
func TestTelemetryReport(t *testing.T) {
	_, env := refmesh.Extensions.Env(t)
	push := model.InitContext(env, nil, &model.PushRequest{Full: true})
	proxy := &model.Proxy{Type: model.SidecarProxy, ID: "reviews-v1-abc.bookinfo", ConfigNamespace: "bookinfo",
		Labels: map[string]string{"app": "reviews", "version": "v1"}}
	r := generators.TelemetryReportFor(push, proxy)
	if got := strings.Join(r.Telemetries, ","); got != "istio-system/mesh-default,bookinfo/bookinfo-logs,bookinfo/reviews-tracing" {
		t.Errorf("telemetries %s", got)
	}
	server, client := r.Classes["server"], r.Classes["client"]
	if len(server.AccessLogs) != 1 || !server.AccessLogs[0].Disabled || server.AccessLogs[0].From != "bookinfo/bookinfo-logs" {
		t.Errorf("server logs %+v", server.AccessLogs)
	}
	if len(client.AccessLogs) != 1 || client.AccessLogs[0].Disabled || client.AccessLogs[0].Filter != "response.code >= 400" ||
		client.AccessLogs[0].From != "istio-system/mesh-default" {
		t.Errorf("client logs %+v", client.AccessLogs)
	}
	tr := client.Tracing
	if tr == nil || !tr.Disabled || tr.Provider != "otel" || tr.From["provider"] != "istio-system/mesh-default" ||
		tr.From["disableSpanReporting"] != "bookinfo/reviews-tracing" || *tr.RandomSampling != 100 {
		b, _ := json.Marshal(tr)
		t.Errorf("tracing %s", b)
	}
	if len(client.Metrics) != 1 || strings.Join(client.Metrics[0].Overrides, ",") == "" || client.Metrics[0].From != "istio-system/mesh-default" {
		t.Errorf("client metrics %+v", client.Metrics)
	}
	if len(server.Metrics) != 1 || len(server.Metrics[0].Overrides) != 0 {
		t.Errorf("server metrics %+v", server.Metrics)
	}
}
