package authn

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/log"
)

var resolverLog = log.RegisterScope("authn", "authentication policy: JWKS resolver")

// Resolver defaults, as Istio 1.31's.
const (
	// DefaultJwksTimeout bounds one HTTP request (Istio's JWTRule timeout
	// default).
	DefaultJwksTimeout = 5 * time.Second
	// DefaultJwksRefreshInterval is how often a key set is fetched again
	// (PILOT_JWT_PUB_KEY_REFRESH_INTERVAL).
	DefaultJwksRefreshInterval = 20 * time.Minute
	// DefaultJwksRetryInterval is the wait after a first failure; it doubles
	// with each further failure up to MaxJwksRetryInterval.
	DefaultJwksRetryInterval = time.Minute
	// MaxJwksRetryInterval caps the backoff.
	MaxJwksRetryInterval = 60 * time.Minute
	// DefaultJwksEviction: a key set unused for that long is forgotten, and
	// one not refreshed successfully for that long is no longer served.
	DefaultJwksEviction = 7 * 24 * time.Hour
)

// ResolverOptions configure a Resolver; zero fields take the defaults.
type ResolverOptions struct {
	// Client makes the requests (nil: NewHTTPClient(HTTPClientOptions{})).
	Client *http.Client
	// Clock schedules refreshes and stamps uses (nil: the wall clock).
	Clock clock.Clock
	// Timeout bounds one request.
	Timeout time.Duration
	// RefreshInterval, RetryInterval and Eviction: see the Default*
	// constants.
	RefreshInterval, RetryInterval, Eviction time.Duration
	// OnChange is called, from Run's goroutine and without locks held, when
	// a served key set appears, changes or is withdrawn: the caller pushes
	// the affected proxies (Istio pushes all). It must not block for long.
	OnChange func()
	// OnFetch, when set, is called from Run's goroutine after every fetch
	// attempt (err nil on success), for logs and tests.
	OnFetch func(uri string, err error)
	// Metrics count the HTTP requests (nil: not counted).
	Metrics *ResolverMetrics
}

// Resolver is the JwksResolver istiod runs: it answers from a cache and
// never blocks a push. The first Resolve of a uri returns not-ok (the JWT
// filter then inlines PublicOnlyJwks) and queues a fetch; once the keys
// arrive OnChange asks for a push. Each key set is fetched again every
// RefreshInterval; a failed fetch keeps serving the last good keys and is
// retried with backoff; keys not refreshed for Eviction are withdrawn and
// keys unused for Eviction forgotten. Run owns the only long-lived
// goroutine. Safe for concurrent use.
type Resolver struct {
	opts ResolverOptions
	kick chan struct{}

	mu      sync.Mutex
	entries map[jwksKey]*jwksEntry
}

var _ IssuerJwksResolver = (*Resolver)(nil)

// jwksKey names a key set: a jwksUri, or an issuer found by OpenID
// discovery.
type jwksKey struct {
	uri    string
	issuer bool
}

type jwksEntry struct {
	jwks        string // last good key set; "" until the first success
	lastUsed    time.Time
	lastSuccess time.Time
	next        time.Time // next fetch
	failures    int       // consecutive
	lastErr     error
	fetching    bool
}

// NewResolver returns a resolver; call Run to fetch anything.
func NewResolver(o ResolverOptions) *Resolver {
	if o.Client == nil {
		o.Client = NewHTTPClient(HTTPClientOptions{})
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Timeout, DefaultJwksTimeout)
	def(&o.RefreshInterval, DefaultJwksRefreshInterval)
	def(&o.RetryInterval, DefaultJwksRetryInterval)
	def(&o.Eviction, DefaultJwksEviction)
	return &Resolver{opts: o, kick: make(chan struct{}, 1), entries: map[jwksKey]*jwksEntry{}}
}

// Resolve returns the cached key set of a jwksUri. The first call for a uri
// returns ok false and queues a fetch.
func (r *Resolver) Resolve(uri string) (string, bool) { return r.lookup(jwksKey{uri: uri}) }

// ResolveIssuer is Resolve for an issuer's keys found by OpenID discovery.
func (r *Resolver) ResolveIssuer(issuer string) (string, bool) {
	return r.lookup(jwksKey{uri: issuer, issuer: true})
}

func (r *Resolver) lookup(k jwksKey) (string, bool) {
	if k.uri == "" {
		return "", false
	}
	now := r.opts.Clock.Now()
	r.mu.Lock()
	e, ok := r.entries[k]
	if !ok {
		e = &jwksEntry{next: now}
		r.entries[k] = e
	}
	e.lastUsed = now
	jwks := e.jwks
	r.mu.Unlock()
	if !ok {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
	return jwks, jwks != ""
}

// JwksStatus is the state of one cached key set, for debug views.
type JwksStatus struct {
	URI         string    `json:"uri"`
	Issuer      bool      `json:"issuer,omitempty"`
	HasKeys     bool      `json:"hasKeys"`
	LastSuccess time.Time `json:"lastSuccess,omitzero"`
	LastUsed    time.Time `json:"lastUsed"`
	NextFetch   time.Time `json:"nextFetch"`
	Failures    int       `json:"failures,omitempty"`
	LastError   string    `json:"lastError,omitempty"`
}

// Status lists the cached key sets by uri.
func (r *Resolver) Status() []JwksStatus {
	r.mu.Lock()
	out := make([]JwksStatus, 0, len(r.entries))
	for k, e := range r.entries {
		s := JwksStatus{URI: k.uri, Issuer: k.issuer, HasKeys: e.jwks != "", LastSuccess: e.lastSuccess,
			LastUsed: e.lastUsed, NextFetch: e.next, Failures: e.failures}
		if e.lastErr != nil {
			s.LastError = e.lastErr.Error()
		}
		out = append(out, s)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].URI != out[j].URI {
			return out[i].URI < out[j].URI
		}
		return !out[i].Issuer
	})
	return out
}

type fetchResult struct {
	key  jwksKey
	jwks string
	err  error
}

// Run fetches and refreshes until stop is closed, then cancels the
// requests in flight and returns once they have ended. One Run at a time.
func (r *Resolver) Run(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		// Fetches cut short are due again when Run is called again.
		r.mu.Lock()
		for _, e := range r.entries {
			e.fetching = false
		}
		r.mu.Unlock()
	}()
	results := make(chan fetchResult)
	for {
		now := r.opts.Clock.Now()
		for _, k := range r.startDue(now) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := r.fetch(ctx, k)
				select {
				case results <- res:
				case <-ctx.Done():
				}
			}()
		}
		var timer clock.Timer
		var fire <-chan time.Time
		if d, ok := r.untilNext(now); ok {
			timer = r.opts.Clock.NewTimer(d)
			fire = timer.C()
		}
		var res *fetchResult
		stopped := false
		select {
		case <-stop:
			stopped = true
		case <-r.kick:
		case <-fire:
		case x := <-results:
			res = &x
		}
		// The timer goes before the result is recorded, so callbacks never
		// see a stale one pending.
		if timer != nil {
			timer.Stop()
		}
		if stopped {
			return
		}
		if res != nil {
			r.finish(*res)
		}
	}
}

// startDue evicts what is stale and marks the entries due at now as
// fetching; it returns their keys.
func (r *Resolver) startDue(now time.Time) []jwksKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	var due []jwksKey
	for k, e := range r.entries {
		if e.fetching {
			continue
		}
		if now.Sub(e.lastUsed) >= r.opts.Eviction {
			delete(r.entries, k)
			resolverLog.Infof("JWKS %s unused since %s: removed from the cache", k.uri, e.lastUsed.Format(time.RFC3339))
			continue
		}
		if !e.next.After(now) {
			e.fetching = true
			due = append(due, k)
		}
	}
	return due
}

// untilNext is the wait until the next entry is due; false when none is
// waiting (all fetching, or none).
func (r *Resolver) untilNext(now time.Time) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var next time.Time
	for _, e := range r.entries {
		if !e.fetching && (next.IsZero() || e.next.Before(next)) {
			next = e.next
		}
	}
	if next.IsZero() {
		return 0, false
	}
	return next.Sub(now), true
}

// finish records a fetch and calls OnChange when the served keys changed.
func (r *Resolver) finish(res fetchResult) {
	now := r.opts.Clock.Now()
	changed := false
	r.mu.Lock()
	if e, ok := r.entries[res.key]; ok {
		e.fetching = false
		if res.err == nil {
			changed = e.jwks == "" || !sameKeySet(e.jwks, res.jwks)
			e.jwks, e.lastSuccess, e.failures, e.lastErr = res.jwks, now, 0, nil
			e.next = now.Add(r.opts.RefreshInterval)
		} else {
			e.failures++
			e.lastErr = res.err
			e.next = now.Add(r.backoff(e.failures))
			if e.jwks != "" && now.Sub(e.lastSuccess) >= r.opts.Eviction {
				e.jwks, changed = "", true
			}
		}
	}
	r.mu.Unlock()
	if res.err != nil {
		resolverLog.Warnf("JWKS %s: %v", res.key.uri, res.err)
	}
	if r.opts.OnFetch != nil {
		r.opts.OnFetch(res.key.uri, res.err)
	}
	if changed && r.opts.OnChange != nil {
		r.opts.OnChange()
	}
}

// backoff is the wait after the n-th consecutive failure.
func (r *Resolver) backoff(n int) time.Duration {
	d := r.opts.RetryInterval
	for i := 1; i < n && d < MaxJwksRetryInterval; i++ {
		d *= 2
	}
	return min(d, MaxJwksRetryInterval)
}
