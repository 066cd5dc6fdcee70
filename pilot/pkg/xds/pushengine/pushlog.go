package pushengine

import (
	"fmt"
	"strings"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
)

// loggedKeys caps the changed objects a push's log line names; the count
// is exact.
const loggedKeys = 5

// logPush says what a push applied: at INFO for a debounced push (one line
// per change set, as Istio's "Push debounce stable" line), at DEBUG for an
// endpoint-only push that bypassed debouncing (one per endpoint change).
func logPush(id uint64, b Debounced, proxies int, took time.Duration) {
	level := pushEngineLog.Infof
	if b.Bypassed {
		level = pushEngineLog.Debugf
	}
	kind := "incremental"
	if b.Request.Full {
		kind = "full"
	}
	level("push %d: %s; pushed to %d proxies (%s, reasons %s, %d events in %v, took %v)",
		id, changeSummary(b.Request), proxies, kind, b.Request.Reason, b.Events,
		b.Released.Sub(b.First).Round(time.Millisecond), took.Round(10*time.Microsecond))
}

// changeSummary names what a request changed: "2 changes: VirtualService
// bookinfo/reviews, DestinationRule bookinfo/reviews", capped at loggedKeys
// names; "all configuration" for a full push that names nothing.
func changeSummary(req *model.PushRequest) string {
	if req.IsEverything() {
		return "all configuration"
	}
	keys := req.ConfigKeys()
	if len(keys) == 0 {
		return "no object named"
	}
	names := make([]string, 0, min(len(keys), loggedKeys))
	for _, k := range keys[:min(len(keys), loggedKeys)] {
		name := k.Name
		if k.Namespace != "" {
			name = k.Namespace + "/" + name
		}
		names = append(names, k.Kind.String()+" "+name)
	}
	s := fmt.Sprintf("%d changes: %s", len(keys), strings.Join(names, ", "))
	if len(keys) == 1 {
		s = "1 change: " + names[0]
	}
	if more := len(keys) - len(names); more > 0 {
		s += fmt.Sprintf(" (+%d more)", more)
	}
	return s
}
