package debug_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds"
	"github.com/meshplane/istiod/pilot/pkg/xds/adsc"
	"github.com/meshplane/istiod/pilot/pkg/xds/debug"
	"github.com/meshplane/istiod/pilot/pkg/xds/xdstest"
)

// oneCluster serves one cluster to everyone.
func oneCluster(*model.Proxy, *xds.WatchedResource, *model.PushRequest) (xds.Generated, error) {
	a, err := anypb.New(&cluster.Cluster{Name: "outbound|80||a.default.svc.cluster.local"})
	return xds.Generated{Resources: []*discovery.Resource{{Name: "outbound|80||a.default.svc.cluster.local", Resource: a}}}, err
}

func debugMux(s *xdstest.Server) *http.ServeMux {
	mux := http.NewServeMux()
	debug.New(debug.Options{XDS: s.DS}).Install(mux)
	return mux
}

func getBody(mux http.Handler, path string) (int, string) {
	req := httptest.NewRequest("GET", path, nil)
	req.RemoteAddr = "127.0.0.1:1"
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// decode parses a JSON body.
func decode(t *testing.T, body string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return v
}

// syncz, adsz and connections answer in Istio's shapes; connectionz has
// the per-type state with a status word.
func TestAdszAndSyncz(t *testing.T) {
	s := xdstest.NewServer(t)
	s.DS.RegisterGenerator(xds.ClusterType, xds.GeneratorFunc(oneCluster))
	s.DS.SetPushContext(model.NewPushContext())
	mux := debugMux(s)
	get := func(path string) string { _, b := getBody(mux, path); return b }
	c := xdstest.Dial(t, s, adsc.Config{NoAutoACK: true, Metadata: map[string]any{"ISTIO_VERSION": "1.31.0", "NAMESPACE": "default", "CLUSTER_ID": "Kubernetes"}})
	if err := c.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	r := xdstest.Next(t, c)
	// the server records what it sent once its send returns, which may be
	// after the client has the response
	syncz := func() map[string]any {
		l := decode(t, get("/debug/syncz")).([]any)
		if len(l) != 1 {
			t.Fatalf("syncz: %v", l)
		}
		return l[0].(map[string]any)
	}
	stale := time.Now().Add(xdstest.Timeout)
	for st := syncz(); st["cluster_sent"] == nil || st["cluster_acked"] != nil; st = syncz() {
		if time.Now().After(stale) {
			t.Fatalf("syncz before ACK: %v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.Contains(get("/debug/connectionz"), `"status": "STALE"`) {
		t.Errorf("connectionz before ACK: %s", get("/debug/connectionz"))
	}
	if err := c.ACK(r); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(xdstest.Timeout)
	for st := syncz(); st["cluster_acked"] != st["cluster_sent"]; st = syncz() {
		if time.Now().After(deadline) {
			t.Fatalf("syncz after ACK: %v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	st := syncz()
	if st["proxy"] != "app-1.default" || st["proxy_type"] != "sidecar" || st["istio_version"] != "1.31.0" || st["cluster_id"] != "Kubernetes" {
		t.Errorf("syncz: %v", st)
	}
	if res, _ := st["resources"].(map[string]any)[xds.ClusterType].(map[string]any); res["sent"] != st["cluster_sent"] || res["sentTime"] == nil {
		t.Errorf("syncz resources: %v", st["resources"])
	}
	if !strings.Contains(get("/debug/connectionz"), `"status": "SYNCED"`) {
		t.Errorf("connectionz after ACK: %s", get("/debug/connectionz"))
	}
	adsz := decode(t, get("/debug/adsz")).(map[string]any)
	clients, _ := adsz["clients"].([]any)
	if adsz["totalClients"] != 1.0 || len(clients) != 1 {
		t.Fatalf("adsz: %v", adsz)
	}
	client := clients[0].(map[string]any)
	watches, _ := client["watches"].(map[string]any)
	if names, ok := watches[xds.ClusterType].([]any); !ok || len(names) != 0 {
		t.Errorf("adsz watches (a wildcard watch lists no names): %v", watches)
	}
	if md, _ := client["metadata"].(map[string]any); md["ISTIO_VERSION"] != "1.31.0" || client["connectionId"] == "" || client["locality"] == nil {
		t.Errorf("adsz client: %v", client)
	}
	conns := decode(t, get("/debug/connections")).(map[string]any)
	if conns["totalClients"] != 1.0 || len(conns["clients"].([]any)[0].(map[string]any)) != 3 {
		t.Errorf("connections: %v", conns)
	}
	if code, body := getBody(mux, "/debug/adsz?proxyID=nobody.default"); code != http.StatusNotFound {
		t.Errorf("adsz of an unknown proxy: %d %s", code, body)
	}
	if code, body := getBody(mux, "/debug/adsz?push=true"); code != http.StatusNotImplemented {
		t.Errorf("adsz?push=true without a pusher: %d %s", code, body)
	}
	code, body := getBody(mux, "/debug/config_dump?proxyID=app-1.default")
	if code != 200 || !strings.Contains(body, "outbound|80||a.default.svc.cluster.local") {
		t.Errorf("config_dump: %d %s", code, body)
	}
	var types []string
	for _, s := range decode(t, body).(map[string]any)["configs"].([]any) {
		types = append(types, strings.TrimPrefix(s.(map[string]any)["@type"].(string), "type.googleapis.com/envoy.admin.v3."))
	}
	if got := strings.Join(types, ","); got != "BootstrapConfigDump,ClustersConfigDump,ListenersConfigDump,ScopedRoutesConfigDump,RoutesConfigDump,SecretsConfigDump,EcdsConfigDump" {
		t.Errorf("config_dump sections: %s", got)
	}
	// decoded: protojson varies its whitespace on purpose
	if code, body := getBody(mux, "/debug/config_dump?proxyID=app-1.default&types=cds"); code != 200 ||
		!hasType(decode(t, body), "type.googleapis.com/envoy.config.cluster.v3.Cluster") {
		t.Errorf("config_dump?types=cds: %d %s", code, body)
	}
	// the proxy watches no endpoints: an empty dump
	if code, body := getBody(mux, "/debug/edsz?proxyID=app-1"); code != 200 || strings.TrimSpace(body) != "{}" {
		t.Errorf("edsz: %d %s", code, body)
	}
	for _, p := range []string{"/debug/config_dump?proxyID=nobody.default", "/debug/sidecarz?proxyID=nobody.default"} {
		if code, _ := getBody(mux, p); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
	for _, p := range []string{"/debug/config_dump", "/debug/edsz", "/debug/sidecarz"} {
		if code, _ := getBody(mux, p); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", p, code)
		}
	}
}

// Istio's empty answers where this control plane has no such data, and
// its list of endpoints.
func TestIstioShapesWithoutData(t *testing.T) {
	s := xdstest.NewServer(t)
	s.DS.SetPushContext(model.NewPushContext())
	pushed := 0
	mux := http.NewServeMux()
	debug.New(debug.Options{XDS: s.DS, PushAll: func() { pushed++ },
		Clusters: func() []debug.ClusterInfo {
			return []debug.ClusterInfo{{ID: "Kubernetes", SyncStatus: debug.ClusterSynced}}
		}}).Install(mux)
	for path, want := range map[string]string{
		"/debug/networkz":          `null`,
		"/debug/mcsz":              `null`,
		"/debug/ambientz":          `{"workloads":null,"services":null,"policies":null}`,
		"/debug/cachez":            `{}`,
		"/debug/cachez?sizes=true": `{"total":"0B"}`,
		"/debug/clusterz":          `[{"id":"Kubernetes","secretName":"","syncStatus":"synced"}]`,
		"/debug/connections":       `{"totalClients":0}`,
		"/debug/adsz":              `{"totalClients":0}`,
		"/debug/syncz":             `[]`,
		"/debug/instancesz":        `{}`,
		"/debug/authorizationz":    `{"authorization_policies":{"namespace_to_policies":{},"root_namespace":"istio-system"}}`,
		"/debug/telemetryz":        `{"telemetries":{"namespace_to_telemetries":{},"root_namespace":"istio-system"}}`,
		"/debug/pushcontext":       `{"AuthorizationPolicies":{"namespace_to_policies":{},"root_namespace":"istio-system"},"NetworkGateways":null,"UnresolvedGateways":null}`,
	} {
		code, body := getBody(mux, path)
		if code != 200 || !reflect.DeepEqual(decode(t, body), decode(t, want)) {
			t.Errorf("%s: %d %s, want %s", path, code, body, want)
		}
	}
	if code, body := getBody(mux, "/debug/adsz?push=true"); code != 200 || body != "Pushed to 0 servers\n" || pushed != 1 {
		t.Errorf("adsz?push=true: %d %q (pushed %d)", code, body, pushed)
	}
	_, body := getBody(mux, "/debug/list")
	var list []string
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	// Istio 1.31's /debug/list (without pprof and force_disconnect)
	for _, want := range []string{"adsz", "adsz?push=true", "ambientz", "authorizationz", "cachez", "cachez?clear=true", "cachez?sizes=true",
		"clusterz", "config_dump", "configz", "connections", "ecdsz", "edsz", "endpointShardz", "endpointz", "inject", "instancesz", "krtz",
		"mcsz", "mesh", "ndsz", "networkz", "push_status", "pushcontext", "registryz", "resourcesz", "sidecarz", "syncz", "telemetryz"} {
		if !slices.Contains(list, want) {
			t.Errorf("/debug/list lacks %s: %v", want, list)
		}
	}
	if slices.Contains(list, "list") || !slices.IsSorted(list) {
		t.Errorf("/debug/list: %v", list)
	}
	// without a cluster source, as Istio without its multicluster controller
	mux = http.NewServeMux()
	debug.New(debug.Options{}).Install(mux)
	if code, _ := getBody(mux, "/debug/clusterz"); code != http.StatusBadRequest {
		t.Errorf("clusterz without clusters: %d", code)
	}
	if code, _ := getBody(mux, "/debug/inject"); code != http.StatusNotFound {
		t.Errorf("inject without an injector: %d", code)
	}
}

// The debug views read copies of the connections' state while the streams
// change it: under -race, reading the watches the stream writes is a data
// race, and Go's runtime stops the process on a concurrent map iteration and
// write ("concurrent map iteration and map write"), which a debug request
// must never cause.
func TestDebugViewsWhileStreamsChangeWatches(t *testing.T) {
	s := xdstest.NewServer(t)
	s.DS.RegisterGenerator(xds.EndpointType, xds.GeneratorFunc(func(_ *model.Proxy, w *xds.WatchedResource, _ *model.PushRequest) (xds.Generated, error) {
		return xds.Generated{}, nil
	}))
	s.DS.SetPushContext(model.NewPushContext())
	mux := debugMux(s)
	c := xdstest.Dial(t, s, adsc.Config{Delta: true})
	if err := c.Watch(xds.EndpointType, "outbound|80||a0.default.svc.cluster.local"); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, c)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, p := range []string{"/debug/adsz", "/debug/syncz", "/debug/connections", "/debug/connectionz"} {
				if code, body := getBody(mux, p); code != 200 {
					t.Errorf("%s: %d %s", p, code, body)
				}
			}
		}
	}()
	for i := 0; i < 200; i++ {
		name := "outbound|80||a" + string(rune('a'+i%26)) + ".default.svc.cluster.local"
		if err := c.SendDelta(&discovery.DeltaDiscoveryRequest{TypeUrl: xds.EndpointType, ResourceNamesSubscribe: []string{name},
			ResourceNamesUnsubscribe: []string{"outbound|80||a0.default.svc.cluster.local"}}); err != nil {
			t.Fatal(err)
		}
		// the answer says the server applied the change while the views ran
		xdstest.Next(t, c)
		if err := c.SendDelta(&discovery.DeltaDiscoveryRequest{TypeUrl: xds.EndpointType, ResourceNamesUnsubscribe: []string{name},
			ResourceNamesSubscribe: []string{"outbound|80||a0.default.svc.cluster.local"}}); err != nil {
			t.Fatal(err)
		}
		xdstest.Next(t, c)
	}
	close(stop)
	wg.Wait()
}

// newXDSServerForDebug serves oneCluster with one proxy, app-1.default,
// connected.
func newXDSServerForDebug(t *testing.T) *xdstest.Server {
	t.Helper()
	s := xdstest.NewServer(t)
	s.DS.RegisterGenerator(xds.ClusterType, xds.GeneratorFunc(oneCluster))
	s.DS.SetPushContext(model.NewPushContext())
	c := xdstest.Dial(t, s, adsc.Config{})
	if err := c.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	xdstest.Next(t, c)
	return s
}

// hasType reports whether a config dump lists a resource of the type.
func hasType(dump any, typeURL string) bool {
	m, _ := dump.(map[string]any)
	configs, _ := m["configs"].([]any)
	for _, c := range configs {
		if cm, _ := c.(map[string]any); cm["@type"] == typeURL {
			return true
		}
	}
	return false
}
