package mesh

import (
	"log/slog"
	"time"
)

// Clock is the time source of this package: timestamps of recorded errors,
// the debounce and the periodic resync of file sources. Tests inject a fake.
type Clock interface {
	Now() time.Time
	// After delivers the time on the returned channel once d has passed.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// RealClock is the wall clock.
var RealClock Clock = realClock{}

// Defaults of the file source.
const (
	DefaultDebounce = 100 * time.Millisecond
	DefaultResync   = time.Minute
)

// Option configures a FileSource, a Watcher or a NetworksWatcher. Options
// that do not concern the object being built are ignored.
type Option func(*options)

type options struct {
	logger   *slog.Logger
	clock    Clock
	debounce time.Duration
	resync   time.Duration
	stop     <-chan struct{}
	// noHostnameGateways: RESOLVE_HOSTNAME_GATEWAYS=false
	noHostnameGateways bool
}

func buildOptions(opts []Option) options {
	o := options{
		logger:   slog.Default(),
		clock:    RealClock,
		debounce: DefaultDebounce,
		resync:   DefaultResync,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithClock sets the clock (default RealClock).
func WithClock(c Clock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

// WithDebounce sets how long a file source waits after the first file event
// before it reads the file, so a burst of events causes one read
// (default DefaultDebounce).
func WithDebounce(d time.Duration) Option {
	return func(o *options) { o.debounce = d }
}

// WithResync sets how often a file source re-reads its file even without an
// event, in case an event was missed; 0 disables it (default DefaultResync).
func WithResync(d time.Duration) Option {
	return func(o *options) { o.resync = d }
}

// WithStop sets the channel whose closing stops a file source's goroutine.
// Close stops it as well.
func WithStop(stop <-chan struct{}) Option {
	return func(o *options) { o.stop = stop }
}

// WithoutHostnameGateways makes a meshNetworks whose gateway address is a
// hostname invalid, as Istio's validation has it with
// RESOLVE_HOSTNAME_GATEWAYS=false (istiod then resolves no hostname).
func WithoutHostnameGateways() Option {
	return func(o *options) { o.noHostnameGateways = true }
}
