package xds

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/diag"
	"github.com/meshplane/istiod/pkg/monitoring"
)

// metricInvalidResources counts generated resources that failed their own
// validation and were dropped instead of sent (ours; Istio sends them and
// the proxy rejects the whole response).
var metricInvalidResources = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pilot_xds_invalid_resources",
	Help: "Generated xDS resources dropped because they failed validation, by type.",
}, []string{"type"})

func init() { monitoring.MustRegister(metricInvalidResources) }

// InvalidResources remembers the resources generators dropped because they
// failed validation, so that the drop is not silent: each is a problem on
// /debug/warningz until a snapshot generates it valid again. Entries belong
// to the newest PushContext seen; a newer snapshot starts over (every
// connected proxy is regenerated from it), and generation from an older one
// (still finishing on some connection) changes nothing. The zero value is
// ready; a nil *InvalidResources records nothing.
type InvalidResources struct {
	mu      sync.Mutex
	seq     uint64                  // of the newest snapshot seen
	entries map[string]diag.Problem // by "type name"
}

func (r *InvalidResources) record(push *model.PushContext, typeURL, name string, err error) {
	metricInvalidResources.WithLabelValues(ShortType(typeURL)).Inc()
	if r == nil {
		return
	}
	subject := ShortType(typeURL) + " " + name
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.currentLocked(push) {
		return
	}
	r.entries[subject] = diag.Problem{Severity: diag.Error, Source: "xds", Subject: subject,
		Message: "generated " + ShortType(typeURL) + " resource " + name + " is invalid and was not sent: " + err.Error()}
}

// valid forgets an earlier drop of the resource.
func (r *InvalidResources) valid(push *model.PushContext, typeURL, name string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.currentLocked(push) && len(r.entries) > 0 {
		delete(r.entries, ShortType(typeURL)+" "+name)
	}
}

// currentLocked starts over when push is newer than any seen, and reports
// whether push is the newest snapshot.
func (r *InvalidResources) currentLocked(push *model.PushContext) bool {
	switch seq := push.Seq(); {
	case seq > r.seq || r.entries == nil:
		r.seq = seq
		r.entries = map[string]diag.Problem{}
		return true
	case seq == r.seq:
		return true
	}
	return false
}

// Problems lists the drops of the latest snapshot, sorted; a diag.Board
// provider.
func (r *InvalidResources) Problems() []diag.Problem {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]diag.Problem, 0, len(r.entries))
	for _, p := range r.entries {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Subject < out[j].Subject })
	return out
}
