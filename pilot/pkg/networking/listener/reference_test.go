package listener_test

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/networking/listener"
	"github.com/meshplane/istiod/pkg/config/protocol"
)

// The outbound HTTP listener of a port has Istio's shape. Allowed
// differences: the HTTP filter list and tracing, which carry Istio's own
// telemetry filters (metadata exchange, stats, ALPN), not built here yet.
func TestHTTPListenerMatchesIstio(t *testing.T) {
	b, err := os.ReadFile("../../../../../shared/reference/bookinfo/real/sidecar-productpage/listeners.json")
	if err != nil {
		t.Skipf("reference not available: %v", err)
	}
	var ref []map[string]any
	_ = json.Unmarshal(b, &ref)
	var want map[string]any
	for _, l := range ref {
		if l["name"] == "0.0.0.0_9080" {
			want = l
		}
	}
	svc := svc("reviews.bookinfo.svc.cluster.local", "10.96.10.12", &model.Port{Name: "http", Port: 9080, Protocol: protocol.HTTP})
	ls := listener.BuildSidecarListeners([]*model.Service{svc}, listener.Options{AllowAny: true, AccessLogFile: "/dev/stdout"})
	out, _ := protojson.Marshal(ls[0])
	var got map[string]any
	_ = json.Unmarshal(out, &got)
	strip := func(l map[string]any) {
		hcm := l["filterChains"].([]any)[0].(map[string]any)["filters"].([]any)[0].(map[string]any)["typedConfig"].(map[string]any)
		delete(hcm, "httpFilters")
		delete(hcm, "tracing")
	}
	strip(want)
	strip(got)
	for k := range want {
		if !reflect.DeepEqual(want[k], got[k]) {
			w, _ := json.Marshal(want[k])
			g, _ := json.Marshal(got[k])
			t.Errorf("field %s differs\nwant %s\n got %s", k, w, g)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("field %s is not in Istio's listener", k)
		}
	}
}
