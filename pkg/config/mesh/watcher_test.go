package mesh_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/meshplane/istiod/pkg/config/mesh"
)

const (
	goodA = "trustDomain: a.local\n"
	goodB = "trustDomain: b.local\n"
	bad   = "trustDomain: 123\n"
)

func TestWatcherNoSources(t *testing.T) {
	log, buf := testLogger()
	w := mesh.NewWatcher(nil, nil, mesh.WithLogger(log))
	if !proto.Equal(w.Mesh(), mesh.DefaultMeshConfig()) {
		t.Errorf("mesh = %v, want defaults", mustJSON(t, w.Mesh()))
	}
	want := []mesh.SourceWarning{{Source: mesh.DefaultsSourceName, Message: mesh.NoSourcesWarning}}
	if got := w.Warnings(); len(got) != 1 || got[0] != want[0] {
		t.Errorf("warnings = %v, want %v", got, want)
	}
	if len(w.Errors()) != 0 {
		t.Errorf("errors = %v", w.Errors())
	}
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), mesh.NoSourcesWarning) {
		t.Errorf("no WARN log for defaults: %s", buf.String())
	}
}

// TestWatcherSingleSource walks one source through good, bad, fixed and
// missing states.
func TestWatcherSingleSource(t *testing.T) {
	clock := newFakeClock()
	log, buf := testLogger()
	src := mesh.NewStaticSource("cm:istio", ptr(goodA))
	w := mesh.NewWatcher([]mesh.Source{src}, nil, mesh.WithLogger(log), mesh.WithClock(clock))
	calls := newCounter()
	w.AddMeshHandler(calls.inc)

	steps := []struct {
		name        string
		set         *string
		advance     time.Duration
		wantTD      string
		wantCalls   int
		wantErr     bool
		wantErrTime time.Duration // offset of Since from the start
	}{
		{name: "initial", set: ptr(goodA), wantTD: "a.local"},
		{name: "bad keeps last good", set: ptr(bad), wantTD: "a.local", wantErr: true},
		{name: "same error keeps its time", set: ptr(bad + "# again\n"), advance: time.Minute, wantTD: "a.local", wantErr: true},
		{name: "new error gets a new time", set: ptr("ingressClass: [x]\n"), advance: time.Minute, wantTD: "a.local", wantErr: true, wantErrTime: 2 * time.Minute},
		{name: "fixed clears the error", set: ptr(goodB), wantTD: "b.local", wantCalls: 1},
		{name: "missing source gives defaults", set: nil, wantTD: "cluster.local", wantCalls: 2},
		{name: "bad without last good gives defaults", set: ptr(bad), wantTD: "cluster.local", wantCalls: 2, wantErr: true, wantErrTime: 2 * time.Minute},
	}
	start := clock.Now()
	for _, st := range steps {
		clock.Advance(st.advance)
		src.Set(st.set)
		if got := w.Mesh().TrustDomain; got != st.wantTD {
			t.Errorf("%s: trustDomain = %q, want %q", st.name, got, st.wantTD)
		}
		if got := calls.count(); got != st.wantCalls {
			t.Errorf("%s: handler calls = %d, want %d", st.name, got, st.wantCalls)
		}
		errs := w.Errors()
		if !st.wantErr {
			if len(errs) != 0 {
				t.Errorf("%s: errors = %v", st.name, errs)
			}
			continue
		}
		if len(errs) != 1 || errs[0].Source != "cm:istio" || errs[0].Err == nil {
			t.Fatalf("%s: errors = %v", st.name, errs)
		}
		if got := errs[0].Since.Sub(start); got != st.wantErrTime {
			t.Errorf("%s: error since +%v, want +%v", st.name, got, st.wantErrTime)
		}
	}
	logs := buf.String()
	if !strings.Contains(logs, "level=WARN msg=\"invalid mesh config, using last known state\" source=cm:istio") ||
		!strings.Contains(logs, "trustDomain") {
		t.Errorf("missing WARN log naming the source and reason:\n%s", logs)
	}
}

func TestWatcherSeveralSources(t *testing.T) {
	cases := []struct {
		name      string
		shared    *string
		primary   *string
		wantTD    string
		wantClass string
		wantErrs  []string
	}{
		{name: "later source wins", shared: ptr("trustDomain: shared.local\ningressClass: shared\n"), primary: ptr(goodA), wantTD: "a.local", wantClass: "shared"},
		{name: "bad shared is skipped", shared: ptr(bad), primary: ptr(goodA), wantTD: "a.local", wantClass: "istio", wantErrs: []string{"shared"}},
		{name: "bad primary is skipped", shared: ptr("ingressClass: shared\n"), primary: ptr(bad), wantTD: "cluster.local", wantClass: "shared", wantErrs: []string{"primary"}},
		{name: "missing shared is skipped", shared: nil, primary: ptr(goodA), wantTD: "a.local", wantClass: "istio"},
		{name: "both bad", shared: ptr(bad), primary: ptr(bad), wantTD: "cluster.local", wantClass: "istio", wantErrs: []string{"shared", "primary"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log, buf := testLogger()
			shared := mesh.NewStaticSource("shared", tc.shared)
			primary := mesh.NewStaticSource("primary", tc.primary)
			w := mesh.NewWatcher([]mesh.Source{shared, primary}, nil, mesh.WithLogger(log))
			if got := w.Mesh(); got.TrustDomain != tc.wantTD || got.IngressClass != tc.wantClass {
				t.Errorf("trustDomain=%q ingressClass=%q, want %q %q", got.TrustDomain, got.IngressClass, tc.wantTD, tc.wantClass)
			}
			var names []string
			for _, e := range w.Errors() {
				names = append(names, e.Source)
			}
			if strings.Join(names, ",") != strings.Join(tc.wantErrs, ",") {
				t.Errorf("errors from %v, want %v", names, tc.wantErrs)
			}
			if len(tc.wantErrs) > 0 && !strings.Contains(buf.String(), "invalid mesh config, ignoring this source") {
				t.Errorf("missing WARN log:\n%s", buf.String())
			}
		})
	}
}

func TestWatcherRecoversSkippedSource(t *testing.T) {
	shared := mesh.NewStaticSource("shared", ptr("ingressClass: shared\n"))
	primary := mesh.NewStaticSource("primary", ptr(goodA))
	w := mesh.NewWatcher([]mesh.Source{shared, primary}, nil)
	calls := newCounter()
	w.AddMeshHandler(calls.inc)

	shared.Set(ptr(bad))
	if w.Mesh().IngressClass != "istio" || w.Mesh().TrustDomain != "a.local" || len(w.Errors()) != 1 {
		t.Fatalf("bad shared: class=%q td=%q errors=%v", w.Mesh().IngressClass, w.Mesh().TrustDomain, w.Errors())
	}
	shared.Set(ptr("ingressClass: fixed\n"))
	if w.Mesh().IngressClass != "fixed" || len(w.Errors()) != 0 || calls.count() != 2 {
		t.Errorf("fixed shared: class=%q errors=%v calls=%d", w.Mesh().IngressClass, w.Errors(), calls.count())
	}
}

func TestWatcherHandlerOnlyOnChange(t *testing.T) {
	src := mesh.NewStaticSource("cm", ptr(goodA))
	w := mesh.NewWatcher([]mesh.Source{src}, nil)
	calls := newCounter()
	w.AddMeshHandler(calls.inc)
	first := w.Mesh()

	for _, text := range []string{
		"# a comment\ntrustDomain: a.local\n",
		"trustDomain: a.local\ningressClass: istio\n", // equals the default
		"{trustDomain: a.local}",
	} {
		src.Set(ptr(text))
	}
	if calls.count() != 0 {
		t.Errorf("handler called %d times for equal configs", calls.count())
	}
	if w.Mesh() != first {
		t.Error("an equal result replaced the config object")
	}
	src.Set(ptr(goodB))
	if calls.count() != 1 {
		t.Errorf("handler called %d times, want 1", calls.count())
	}
}

func TestWatcherWarnings(t *testing.T) {
	log, buf := testLogger()
	src := mesh.NewStaticSource("cm", ptr("trustDomainz: x\n"))
	w := mesh.NewWatcher([]mesh.Source{src}, nil, mesh.WithLogger(log))
	got := w.Warnings()
	if len(got) != 1 || got[0].Source != "cm" || !strings.Contains(got[0].Message, "trustDomainz") {
		t.Fatalf("warnings = %v", got)
	}
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "trustDomainz") {
		t.Errorf("dropped field not logged:\n%s", buf.String())
	}
	src.Set(ptr(bad)) // rejected: the active config, and its warnings, stay
	if len(w.Warnings()) != 1 {
		t.Errorf("warnings after a rejected document = %v", w.Warnings())
	}
	src.Set(ptr(goodA))
	if len(w.Warnings()) != 0 {
		t.Errorf("warnings after a clean document = %v", w.Warnings())
	}
}

func TestWatcherStop(t *testing.T) {
	stop := make(chan struct{})
	src := mesh.NewStaticSource("cm", ptr(goodA))
	w := mesh.NewWatcher([]mesh.Source{src}, stop)
	calls := newCounter()
	w.AddMeshHandler(calls.inc)
	close(stop)
	src.Set(ptr(goodB))
	if w.Mesh().TrustDomain != "a.local" || calls.count() != 0 {
		t.Errorf("stopped watcher reacted: td=%q calls=%d", w.Mesh().TrustDomain, calls.count())
	}
}

func TestNetworksWatcher(t *testing.T) {
	const net1 = "networks:\n  net1:\n    endpoints:\n    - fromRegistry: c1\n"
	const net2 = "networks:\n  net2:\n    endpoints:\n    - fromRegistry: c2\n"
	shared := mesh.NewStaticSource("shared", nil)
	file := mesh.NewStaticSource("file", ptr(net1))
	w := mesh.NewNetworksWatcher([]mesh.Source{shared, file}, nil)
	calls := newCounter()
	w.AddNetworksHandler(calls.inc)

	has := func(name string) bool { _, ok := w.Networks().Networks[name]; return ok }
	if !has("net1") {
		t.Fatalf("networks = %v", w.Networks())
	}
	shared.Set(ptr(net2)) // the first present source wins outright
	if !has("net2") || has("net1") || calls.count() != 1 {
		t.Errorf("after shared: %v calls=%d", w.Networks(), calls.count())
	}
	shared.Set(ptr("networks: 1\n")) // bad: keep last good
	if !has("net2") || len(w.Errors()) != 1 || w.Errors()[0].Source != "shared" || calls.count() != 1 {
		t.Errorf("after bad: %v errors=%v calls=%d", w.Networks(), w.Errors(), calls.count())
	}
	shared.Set(nil)
	if !has("net1") || len(w.Errors()) != 0 {
		t.Errorf("after shared removed: %v errors=%v", w.Networks(), w.Errors())
	}
	file.Set(nil)
	if !proto.Equal(w.Networks(), mesh.DefaultMeshNetworks()) {
		t.Errorf("no source: %v", w.Networks())
	}
}

// WithoutHostnameGateways (RESOLVE_HOSTNAME_GATEWAYS=false): a document
// with a hostname gateway is rejected and the last good value kept.
func TestNetworksWatcherWithoutHostnameGateways(t *testing.T) {
	const ip = "networks:\n  net1:\n    gateways:\n    - address: 1.2.3.4\n      port: 15443\n"
	const host = "networks:\n  net1:\n    gateways:\n    - address: gw.example.com\n      port: 15443\n"
	src := mesh.NewStaticSource("file", ptr(ip))
	w := mesh.NewNetworksWatcher([]mesh.Source{src}, nil, mesh.WithoutHostnameGateways())
	src.Set(ptr(host))
	if errs := w.Errors(); len(errs) != 1 || !strings.Contains(errs[0].Err.Error(), "RESOLVE_HOSTNAME_GATEWAYS") {
		t.Fatalf("errors %v", errs)
	}
	if gw := w.Networks().Networks["net1"].GetGateways()[0].GetAddress(); gw != "1.2.3.4" {
		t.Errorf("kept %q, want the last good 1.2.3.4", gw)
	}
	// by default the hostname is a gateway
	d := mesh.NewNetworksWatcher([]mesh.Source{mesh.NewStaticSource("file", ptr(host))}, nil)
	if len(d.Errors()) != 0 {
		t.Errorf("default watcher rejected a hostname gateway: %v", d.Errors())
	}
}
