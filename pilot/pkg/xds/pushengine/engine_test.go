package pushengine_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds/pushengine"
	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
	"github.com/meshplane/istiod/pkg/monitoring"
)

// engineHarness runs a Engine on a fake clock; each Push hands the
// request to the test and takes pushTook on the clock.
type engineHarness struct {
	engine *pushengine.Engine
	clock  *clock.Fake
	pushed chan *model.PushRequest
	stop   chan struct{}
}

const pushTook = 30 * ms

func newEngine(t *testing.T, opts pushengine.Options) *engineHarness {
	h := &engineHarness{clock: clock.NewFake(epoch), pushed: make(chan *model.PushRequest, 16), stop: make(chan struct{})}
	opts.Clock = h.clock
	opts.Push = func(r *model.PushRequest) model.PushResult {
		h.clock.Advance(pushTook)
		h.pushed <- r
		return model.PushResult{ProxiesPushed: 3, IndexesRebuilt: []string{"virtualservices"}, IndexesReused: []string{"services"}}
	}
	h.engine = pushengine.New(opts)
	t.Cleanup(func() {
		select {
		case <-h.stop:
		default:
			close(h.stop)
		}
		<-h.engine.Done()
	})
	return h
}

func (h *engineHarness) next(t *testing.T) *model.PushRequest {
	t.Helper()
	select {
	case r := <-h.pushed:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no push")
		return nil
	}
}

// waitRecorded waits until n pushes are in the history (Push has returned).
func (h *engineHarness) waitRecorded(t *testing.T, n int) []pushengine.PushRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !h.engine.History().WaitFinished(ctx, uint64(n)) {
		t.Fatalf("history never reached %d pushes", n)
	}
	return h.engine.History().List()
}

func counterValue(t *testing.T, name, label string) float64 {
	t.Helper()
	mfs, err := monitoring.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetValue() == label {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestPushEngineMergesAndRecords(t *testing.T) {
	h := newEngine(t, pushengine.Options{Debounce: pushengine.DefaultDebounceOptions()})
	inbound0 := counterValue(t, "pilot_inbound_updates", "config")
	cfgTriggers0 := counterValue(t, "pilot_push_triggers", "config")
	unknown0 := counterValue(t, "pilot_push_triggers", "unknown")

	h.engine.ConfigUpdate(cfgReq("a")) // before Start: held
	h.engine.Start(h.stop)
	h.engine.ConfigUpdate(cfgReq("b"))
	h.engine.ConfigUpdate(&model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(vsKey("c"))}) // no reason
	h.clock.Advance(100 * ms)

	req := h.next(t)
	if keysOf(req) != keysOf(cfgReq("a", "b", "c")) || req.Reason[model.ConfigUpdate] != 2 || req.Reason[model.UnknownTrigger] != 1 {
		t.Fatalf("pushed %v", req)
	}
	recs := h.waitRecorded(t, 1)
	rec := recs[0]
	if rec.ID != 1 || rec.Events != 3 || !rec.Full || rec.Everything || rec.ConfigsUpdatedCount != 3 ||
		time.Duration(rec.Debounce) != 100*ms || time.Duration(rec.Duration) != pushTook ||
		rec.ProxiesPushed != 3 || rec.IndexesRebuilt[0] != "virtualservices" || !rec.Time.Equal(epoch.Add(100*ms)) {
		t.Fatalf("record %+v", rec)
	}
	if got := counterValue(t, "pilot_inbound_updates", "config") - inbound0; got != 3 {
		t.Fatalf("pilot_inbound_updates{config} += %v", got)
	}
	if got := counterValue(t, "pilot_push_triggers", "config") - cfgTriggers0; got != 2 {
		t.Fatalf("pilot_push_triggers{config} += %v", got)
	}
	if got := counterValue(t, "pilot_push_triggers", "unknown") - unknown0; got != 1 {
		t.Fatalf("pilot_push_triggers{unknown} += %v", got)
	}
	if s := h.engine.Stats(); s.Inbound != 3 || s.Pushes != 1 || s.Debounce.Released != 3 {
		t.Fatalf("stats %+v", s)
	}
}

func TestPushEngineMeshChangeIsForcedEverything(t *testing.T) {
	h := newEngine(t, pushengine.Options{Debounce: pushengine.DefaultDebounceOptions()})
	h.engine.Start(h.stop)
	h.engine.ConfigUpdate(cfgReq("a"))
	// what bootstrap sends on a mesh config change
	h.engine.ConfigUpdate(&model.PushRequest{Full: true, Forced: true, Reason: model.NewReasonStats(model.GlobalUpdate)})
	h.clock.Advance(100 * ms)
	req := h.next(t)
	if !req.Forced || !req.IsEverything() {
		t.Fatalf("pushed %v", req)
	}
	if rec := h.waitRecorded(t, 1)[0]; !rec.Everything || !rec.Forced || rec.ConfigsUpdatedCount != 0 {
		t.Fatalf("record %+v", rec)
	}
}

func TestPushEngineEDSBypassRecorded(t *testing.T) {
	opts := pushengine.DefaultDebounceOptions()
	opts.EnableEDSDebounce = false
	h := newEngine(t, pushengine.Options{Debounce: opts})
	h.engine.Start(h.stop)
	h.engine.ConfigUpdate(edsReq("x"))
	if req := h.next(t); req.Full {
		t.Fatalf("pushed %v", req)
	}
	if rec := h.waitRecorded(t, 1)[0]; !rec.Bypassed || rec.Full || rec.Debounce != 0 {
		t.Fatalf("record %+v", rec)
	}
}

func TestPushEngineServiceKindAssertion(t *testing.T) {
	bad := &model.PushRequest{Full: true, ConfigsUpdated: model.NewConfigKeys(model.ConfigKey{Kind: kind.Service, Name: "s", Namespace: "ns"})}
	h := newEngine(t, pushengine.Options{Debounce: pushengine.DefaultDebounceOptions(), UnsafeAssertions: true})
	h.engine.Start(h.stop)
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "Service/ns/s") {
				t.Fatalf("recovered %v", r)
			}
		}()
		h.engine.ConfigUpdate(bad)
	}()
	// without assertions the request is logged and still pushed
	h2 := newEngine(t, pushengine.Options{Debounce: pushengine.DefaultDebounceOptions()})
	h2.engine.Start(h2.stop)
	h2.engine.ConfigUpdate(bad)
	h2.clock.Advance(100 * ms)
	h2.next(t)
}

func TestPushEngineStopAndDone(t *testing.T) {
	h := newEngine(t, pushengine.Options{Debounce: pushengine.DefaultDebounceOptions()})
	h.engine.Start(h.stop)
	h.engine.Start(h.stop) // second Start is a no-op
	h.engine.ConfigUpdate(cfgReq("a"))
	close(h.stop)
	<-h.engine.Done()
	h.engine.ConfigUpdate(cfgReq("b"))
	h.clock.Advance(time.Hour)
	select {
	case r := <-h.pushed:
		t.Fatalf("push after stop: %v", r)
	default:
	}
}

func vsObject(host string, annotations map[string]string) config.Config {
	return config.Config{
		Meta: config.Meta{GroupVersionKind: gvk.VirtualService, Name: "reviews", Namespace: "default", Annotations: annotations},
		Spec: &networking.VirtualService{Hosts: []string{host}},
	}
}

func TestPushzThroughConfigHandler(t *testing.T) {
	h := newEngine(t, pushengine.Options{Debounce: pushengine.DefaultDebounceOptions()})
	h.engine.Start(h.stop)
	handle := h.engine.ConfigHandler().Handle

	handle(config.Config{}, vsObject("a", nil), model.EventAdd)
	// a GitOps tool rewrites its annotation: suppressed and remembered
	handle(vsObject("a", nil), vsObject("a", map[string]string{"argocd.argoproj.io/tracking-id": "x"}), model.EventUpdate)
	h.clock.Advance(100 * ms)
	h.next(t)
	h.waitRecorded(t, 1)

	srv := httptest.NewServer(h.engine.PushzHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/debug/pushz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		TotalPushes uint64 `json:"totalPushes"`
		Pushes      []struct {
			Reasons        map[string]int `json:"reasons"`
			ConfigsUpdated []string       `json:"configsUpdated"`
			Debounce       string         `json:"debounce"`
			ProxiesPushed  int            `json:"proxiesPushed"`
		} `json:"pushes"`
		TotalSuppressed int `json:"totalSuppressed"`
		Suppressed      []struct {
			Kind, Name, Rule, Detail string
		} `json:"suppressed"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.TotalPushes != 1 || len(doc.Pushes) != 1 || doc.Pushes[0].Reasons["config"] != 1 ||
		doc.Pushes[0].ConfigsUpdated[0] != "VirtualService/default/reviews" || doc.Pushes[0].Debounce != "100ms" {
		t.Fatalf("pushes %+v", doc)
	}
	if doc.TotalSuppressed != 1 || doc.Suppressed[0].Rule != "spec-unchanged" ||
		!strings.Contains(doc.Suppressed[0].Detail, "argocd.argoproj.io/tracking-id") || doc.Suppressed[0].Kind != "VirtualService" {
		t.Fatalf("suppressed %+v", doc.Suppressed)
	}
}

func TestPushzHandler(t *testing.T) {
	hist := pushengine.NewPushHistory(2)
	for i := range 3 {
		id := hist.NextID()
		hist.Add(pushengine.PushRecord{ID: id, Events: i})
	}
	sup := model.NewSuppressedUpdates(2)
	sup.Record(model.SuppressedUpdate{Name: "a"})

	get := func(h http.HandlerFunc, query string) (int, pushengine.Pushz) {
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest(http.MethodGet, "/debug/pushz"+query, nil))
		var doc pushengine.Pushz
		if rec.Code == http.StatusOK {
			if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
		}
		return rec.Code, doc
	}
	code, doc := get(pushengine.PushzHandler(hist, sup), "")
	if code != 200 || doc.TotalPushes != 3 || len(doc.Pushes) != 2 || doc.Pushes[0].ID != 3 || doc.Pushes[1].ID != 2 || len(doc.Suppressed) != 1 {
		t.Fatalf("doc %+v", doc)
	}
	if _, doc := get(pushengine.PushzHandler(hist, sup), "?limit=1"); len(doc.Pushes) != 1 || doc.Pushes[0].ID != 3 {
		t.Fatalf("limited %+v", doc)
	}
	if code, _ := get(pushengine.PushzHandler(hist, sup), "?limit=x"); code != http.StatusBadRequest {
		t.Fatalf("bad limit answered %d", code)
	}
	if code, doc := get(pushengine.PushzHandler(nil, nil), ""); code != 200 || doc.Pushes == nil || doc.Suppressed == nil {
		t.Fatalf("nil sources: %d %+v", code, doc)
	}
}

// A request that arrives untimed (a registry's endpoint push) is timed
// from its arrival, so that its proxies' convergence is recorded; one
// that carries its start keeps it.
func TestPushEngineTimesUntimedRequests(t *testing.T) {
	opts := pushengine.DefaultDebounceOptions()
	opts.EnableEDSDebounce = false
	h := newEngine(t, pushengine.Options{Debounce: opts})
	h.engine.Start(h.stop)
	arrived := h.clock.Now()
	h.engine.ConfigUpdate(edsReq("x"))
	if req := h.next(t); !req.Start.Equal(arrived) {
		t.Errorf("untimed request started at %v, want its arrival %v", req.Start, arrived)
	}
	timed := edsReq("y")
	timed.Start = arrived.Add(-time.Minute)
	h.engine.ConfigUpdate(timed)
	if req := h.next(t); !req.Start.Equal(timed.Start) {
		t.Errorf("timed request started at %v, want %v", req.Start, timed.Start)
	}
}
