package pushengine

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/ring"
)

// DefaultPushHistory is how many pushes /debug/pushz remembers.
const DefaultPushHistory = 100

// maxRecordedKeys caps the keys a push record lists; the count is exact.
const maxRecordedKeys = 100

// JSONDuration is a time.Duration that renders as "1.5s" in JSON.
type JSONDuration time.Duration

// MarshalJSON renders the duration as a Go duration string.
func (d JSONDuration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON parses a Go duration string.
func (d *JSONDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = JSONDuration(v)
	return err
}

// PushRecord describes one push for /debug/pushz.
type PushRecord struct {
	// ID numbers pushes from 1 in the order they started.
	ID uint64 `json:"id"`
	// Time is when the push started.
	Time    time.Time         `json:"time"`
	Reasons model.ReasonStats `json:"reasons"`
	Full    bool              `json:"full"`
	Forced  bool              `json:"forced,omitempty"`
	// Everything marks a full push that names no object: every proxy and
	// every index is concerned.
	Everything bool `json:"everything,omitempty"`
	// ConfigsUpdated lists the changed objects (at most 100, sorted);
	// ConfigsUpdatedCount counts all of them.
	ConfigsUpdated      []string `json:"configsUpdated,omitempty"`
	ConfigsUpdatedCount int      `json:"configsUpdatedCount"`
	// Events is how many requests the debouncer merged into this push.
	Events int `json:"events"`
	// Debounce is the wait from the first request to the push.
	Debounce JSONDuration `json:"debounce"`
	// Bypassed marks an endpoint-only push that skipped debouncing.
	Bypassed bool `json:"bypassedDebounce,omitempty"`
	// IndexesRebuilt and IndexesReused name the PushContext indexes built
	// for this push and those carried over from the previous snapshot.
	IndexesRebuilt []string `json:"indexesRebuilt,omitempty"`
	IndexesReused  []string `json:"indexesReused,omitempty"`
	// ProxiesPushed counts the connections the push was queued for.
	ProxiesPushed int `json:"proxiesPushed"`
	// Duration is how long the push computation took.
	Duration JSONDuration `json:"duration"`
}

// newPushRecord fills a record from a released batch.
func newPushRecord(b Debounced) PushRecord {
	r := b.Request
	rec := PushRecord{
		Time:                b.Released,
		Reasons:             r.Reason.Merge(nil),
		Full:                r.Full,
		Forced:              r.Forced,
		Everything:          r.IsEverything(),
		ConfigsUpdatedCount: len(r.ConfigsUpdated),
		Events:              b.Events,
		Debounce:            JSONDuration(b.Released.Sub(b.First)),
		Bypassed:            b.Bypassed,
	}
	for i, k := range r.ConfigKeys() {
		if i == maxRecordedKeys {
			break
		}
		rec.ConfigsUpdated = append(rec.ConfigsUpdated, k.String())
	}
	return rec
}

// PushHistory remembers the last pushes in a ring. It is safe for
// concurrent use.
type PushHistory struct {
	mu       sync.Mutex
	ring     *ring.Ring[PushRecord]
	total    uint64
	finished uint64
	changed  chan struct{} // closed and replaced by every Add
}

// NewPushHistory keeps the last size pushes (DefaultPushHistory when
// size <= 0).
func NewPushHistory(size int) *PushHistory {
	if size <= 0 {
		size = DefaultPushHistory
	}
	return &PushHistory{ring: ring.New[PushRecord](size), changed: make(chan struct{})}
}

// NextID reserves the ID of a push about to start.
func (h *PushHistory) NextID() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.total++
	return h.total
}

// Add remembers a finished push, evicting the oldest when full.
func (h *PushHistory) Add(r PushRecord) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring.Add(r)
	h.finished++
	close(h.changed)
	h.changed = make(chan struct{})
}

// Finished counts the pushes recorded by Add since start.
func (h *PushHistory) Finished() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.finished
}

// WaitFinished blocks until at least n pushes have been recorded, and
// reports false if ctx ended first. Tests wait on this sequence number
// instead of sleeping.
func (h *PushHistory) WaitFinished(ctx context.Context, n uint64) bool {
	for {
		h.mu.Lock()
		if h.finished >= n {
			h.mu.Unlock()
			return true
		}
		ch := h.changed
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// List returns the remembered pushes, most recently finished first; the
// slice is the caller's.
func (h *PushHistory) List() []PushRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ring.List()
}

// Total counts the pushes started since start.
func (h *PushHistory) Total() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}

// Pushz is the document /debug/pushz serves.
type Pushz struct {
	TotalPushes     uint64                   `json:"totalPushes"`
	Pushes          []PushRecord             `json:"pushes"`
	TotalSuppressed int64                    `json:"totalSuppressed"`
	Suppressed      []model.SuppressedUpdate `json:"suppressed"`
}

// PushzHandler serves the last pushes and the last updates NeedsPush
// suppressed, newest first, as JSON; ?limit=N keeps the first N of each
// list. Either source may be nil.
func PushzHandler(history *PushHistory, suppressed *model.SuppressedUpdates) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		out := Pushz{Pushes: []PushRecord{}, Suppressed: []model.SuppressedUpdate{}}
		if history != nil {
			out.TotalPushes = history.Total()
			out.Pushes = history.List()
		}
		if suppressed != nil {
			out.TotalSuppressed = suppressed.Total()
			out.Suppressed = suppressed.List()
		}
		if v := r.URL.Query().Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				http.Error(w, "limit must be a non-negative integer", http.StatusBadRequest)
				return
			}
			out.Pushes = out.Pushes[:min(n, len(out.Pushes))]
			out.Suppressed = out.Suppressed[:min(n, len(out.Suppressed))]
		}
		b, err := json.MarshalIndent(out, "", "    ")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(b, '\n'))
	}
}
