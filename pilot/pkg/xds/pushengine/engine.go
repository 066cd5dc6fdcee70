package pushengine

import (
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/log"
)

var pushEngineLog = log.RegisterScope("push", "push decisions: NeedsPush, debounce, push queue")

// Options configure an Engine.
type Options struct {
	// Debounce tunes the debouncer (see DefaultDebounceOptions).
	Debounce DebounceOptions
	// Clock is the time source (default: the wall clock).
	Clock clock.Clock
	// Push runs once per merged request: it builds the push context for
	// full requests and queues the concerned connections. It is never
	// called concurrently for debounced requests; endpoint-only requests
	// that bypass debouncing (Debounce.EnableEDSDebounce false) may run
	// alongside. The request is Push's to read; it must not be modified.
	Push func(*model.PushRequest) model.PushResult
	// HistorySize is how many pushes and suppressed updates /debug/pushz
	// remembers (default 100).
	HistorySize int
	// UnsafeAssertions panics on requests that break an invariant (kind
	// Service in ConfigsUpdated) instead of logging them.
	UnsafeAssertions bool
}

// Engine turns change notifications into pushes: it is the
// ConfigUpdate entry point of the XDSUpdater, debounces, calls Push once per
// merged request and records what it did for metrics and /debug/pushz. The
// per-proxy part (which connection needs what) lives in Push.
type Engine struct {
	opts       Options
	clock      clock.Clock
	debouncer  *Debouncer
	history    *PushHistory
	suppressed *model.SuppressedUpdates
	configs    *model.ConfigPushHandler
	inbound    atomic.Int64

	startOnce sync.Once
	done      chan struct{}
}

// New returns an engine that holds requests until Start.
func New(opts Options) *Engine {
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.Push == nil {
		opts.Push = func(*model.PushRequest) model.PushResult { return model.PushResult{} }
	}
	e := &Engine{
		opts:       opts,
		clock:      opts.Clock,
		history:    NewPushHistory(opts.HistorySize),
		suppressed: model.NewSuppressedUpdates(opts.HistorySize),
		done:       make(chan struct{}),
	}
	e.debouncer = NewDebouncer(opts.Debounce, opts.Clock, e.push)
	e.configs = model.NewConfigPushHandler(e.ConfigUpdate, e.suppressed, opts.Clock)
	return e
}

// ConfigUpdate requests a push; requests are merged and debounced. req is
// read-only to the engine. A request without a reason counts as "unknown".
func (e *Engine) ConfigUpdate(req *model.PushRequest) {
	if req == nil {
		return
	}
	if err := req.Validate(); err != nil {
		if e.opts.UnsafeAssertions {
			panic("assertion failed: " + err.Error())
		}
		pushEngineLog.Errorf("%v", err)
	}
	if len(req.Reason) == 0 || req.Start.IsZero() {
		r := *req
		if len(r.Reason) == 0 {
			r.Reason = model.NewReasonStats(model.UnknownTrigger)
		}
		if r.Start.IsZero() {
			// a change is timed from its arrival, so that a proxy's
			// convergence (pilot_proxy_convergence_time) counts every push,
			// the registries' endpoint pushes included, as Istio's does
			r.Start = e.clock.Now()
		}
		req = &r
	}
	RecordInboundUpdate(InboundConfig)
	RecordPushTriggers(req.Reason)
	e.inbound.Add(1)
	e.debouncer.Enqueue(req)
}

// ConfigHandler returns the handler config stores report events to: it
// applies NeedsPush, remembers what it suppresses and calls ConfigUpdate.
// Register its Handle method with RegisterEventHandler.
func (e *Engine) ConfigHandler() *model.ConfigPushHandler { return e.configs }

// Start begins pushing; when stop closes the engine drops pending requests,
// waits for running pushes and closes Done. Later calls do nothing.
func (e *Engine) Start(stop <-chan struct{}) {
	e.startOnce.Do(func() {
		e.debouncer.Start()
		go func() {
			<-stop
			e.debouncer.Stop()
			close(e.done)
		}()
	})
}

// Done is closed once the engine has stopped after Start.
func (e *Engine) Done() <-chan struct{} { return e.done }

// History returns the record of recent pushes.
func (e *Engine) History() *PushHistory { return e.history }

// Suppressed returns the record of recent suppressed config updates.
func (e *Engine) Suppressed() *model.SuppressedUpdates { return e.suppressed }

// PushzHandler serves /debug/pushz for this engine.
func (e *Engine) PushzHandler() http.HandlerFunc { return PushzHandler(e.history, e.suppressed) }

// Stats describe the engine's work so far.
type Stats struct {
	// Inbound counts ConfigUpdate calls.
	Inbound int64
	// Pushes counts Push calls started.
	Pushes   uint64
	Debounce DebounceStats
}

// Stats returns a snapshot of the counters.
func (e *Engine) Stats() Stats {
	return Stats{Inbound: e.inbound.Load(), Pushes: e.history.Total(), Debounce: e.debouncer.Stats()}
}

// push runs one released batch.
func (e *Engine) push(b Debounced) {
	rec := newPushRecord(b)
	rec.ID = e.history.NextID()
	if !b.Bypassed {
		recordDebounceTime(b.Released.Sub(b.First))
	}
	pushEngineLog.Debugf("push %d: %d events merged after %v: %v", rec.ID, b.Events, b.Released.Sub(b.First), b.Request)
	start := e.clock.Now()
	res := e.opts.Push(b.Request)
	took := e.clock.Since(start)
	logPush(rec.ID, b, res.ProxiesPushed, took)
	rec.Duration = JSONDuration(took)
	rec.ProxiesPushed = res.ProxiesPushed
	rec.IndexesRebuilt = res.IndexesRebuilt
	rec.IndexesReused = res.IndexesReused
	e.history.Add(rec)
}
