package pushengine_test

import (
	"strings"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pilot/pkg/xds/pushengine"
	"github.com/meshplane/istiod/pkg/log/logtest"
)

// Each debounced push says at INFO what it applies (kinds and names, at most
// five, with the count) and to how many proxies it went.
func TestPushEngineLogsEachChangeSet(t *testing.T) {
	logs := logtest.Capture(t)
	h := newEngine(t, pushengine.Options{Debounce: pushengine.DefaultDebounceOptions()})
	h.engine.Start(h.stop)
	h.engine.ConfigUpdate(cfgReq("a", "b", "c", "d", "e", "f", "g"))
	h.clock.Advance(100 * ms)
	h.next(t)
	h.waitRecorded(t, 1)
	h.engine.ConfigUpdate(&model.PushRequest{Full: true, Forced: true, Reason: model.NewReasonStats(model.GlobalUpdate)})
	h.clock.Advance(100 * ms)
	h.next(t)
	h.waitRecorded(t, 2)

	want := "push 1: 7 changes: VirtualService default/a, VirtualService default/b, VirtualService default/c, " +
		"VirtualService default/d, VirtualService default/e (+2 more); pushed to 3 proxies (full, reasons config:1, 1 events in 100ms, took 30ms)"
	if got := logs.Lines("INFO", "\tpush\t"); len(got) != 2 || !strings.Contains(got[0], want) ||
		!strings.Contains(got[1], "push 2: all configuration; pushed to 3 proxies (full, reasons global:1") {
		t.Fatalf("INFO lines\n%s\nwant the first to hold\n%s", strings.Join(got, "\n"), want)
	}
}
