package debug_test

import (
	"net/http"
	"net/http/httptest"
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

func TestAdszAndSyncz(t *testing.T) {
	s := xdstest.NewServer(t)
	s.DS.RegisterGenerator(xds.ClusterType, xds.GeneratorFunc(oneCluster))
	s.DS.SetPushContext(model.NewPushContext())
	mux := debugMux(s)
	get := func(path string) string { _, b := getBody(mux, path); return b }
	c := xdstest.Dial(t, s, adsc.Config{NoAutoACK: true, Metadata: map[string]any{"ISTIO_VERSION": "1.31.0", "NAMESPACE": "default"}})
	if err := c.Watch(xds.ClusterType); err != nil {
		t.Fatal(err)
	}
	r := xdstest.Next(t, c)
	// the server records what it sent once its send returns, which may be
	// after the client has the response
	stale := time.Now().Add(xdstest.Timeout)
	for body := get("/debug/syncz"); !strings.Contains(body, `"status": "STALE"`); body = get("/debug/syncz") {
		if time.Now().After(stale) {
			t.Fatalf("syncz before ACK: %s", body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.ACK(r); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(xdstest.Timeout)
	for !strings.Contains(get("/debug/syncz"), `"status": "SYNCED"`) {
		if time.Now().After(deadline) {
			t.Fatalf("syncz after ACK: %s", get("/debug/syncz"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	adsz := get("/debug/adsz")
	for _, want := range []string{`"proxyType": "sidecar"`, `"cds": [`, `"*"`, `"ISTIO_VERSION": "1.31.0"`, `"namespace": "default"`} {
		if !strings.Contains(adsz, want) {
			t.Errorf("adsz lacks %s: %s", want, adsz)
		}
	}
	if code, body := getBody(mux, "/debug/config_dump?proxyID=app-1.default"); code != 200 || !strings.Contains(body, "outbound|80||a.default.svc.cluster.local") {
		t.Errorf("config_dump: %d %s", code, body)
	}
	if code, _ := getBody(mux, "/debug/config_dump?proxyID=nobody.default"); code != http.StatusNotFound {
		t.Errorf("config_dump of an unknown proxy: %d, want 404", code)
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
			for _, p := range []string{"/debug/adsz", "/debug/syncz", "/debug/connections"} {
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
