package authn_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pilot/pkg/security/authn"
	"github.com/meshplane/istiod/pkg/clock"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/log/logtest"
)

// keyServer serves a body and status per path; tests change them.
type keyServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies map[string]string
	codes  map[string]int
}

func newKeyServer(t *testing.T) *keyServer {
	s := &keyServer{bodies: map[string]string{}, codes: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		body, code := s.bodies[r.URL.Path], s.codes[r.URL.Path]
		s.mu.Unlock()
		if code == 0 {
			code = http.StatusNotFound
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("test server on %s, want 127.0.0.1", s.URL)
	}
	t.Cleanup(s.Close)
	return s
}

func (s *keyServer) set(path string, code int, body string) {
	s.mu.Lock()
	s.bodies[path], s.codes[path] = body, code
	s.mu.Unlock()
}

type fetchEvent struct {
	uri string
	err error
}

// resolverHarness runs a Resolver on a fake clock and records its
// callbacks.
type resolverHarness struct {
	t       *testing.T
	clock   *clock.Fake
	r       *authn.Resolver
	changes chan struct{}
	fetches chan fetchEvent
	logs    *logtest.Buffer
}

func newResolverHarness(t *testing.T, mutate ...func(*authn.ResolverOptions)) *resolverHarness {
	h := &resolverHarness{t: t, clock: clock.NewFake(t0), changes: make(chan struct{}, 100), fetches: make(chan fetchEvent, 100),
		logs: logtest.Capture(t)}
	o := authn.ResolverOptions{
		Clock:    h.clock,
		OnChange: func() { h.changes <- struct{}{} },
		OnFetch:  func(uri string, err error) { h.fetches <- fetchEvent{uri, err} },
	}
	for _, m := range mutate {
		m(&o)
	}
	h.r = authn.NewResolver(o)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		h.r.Run(stop)
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
	return h
}

// fetched waits for the next fetch and checks its outcome.
func (h *resolverHarness) fetched(wantErr bool) fetchEvent {
	h.t.Helper()
	select {
	case e := <-h.fetches:
		if (e.err != nil) != wantErr {
			h.t.Fatalf("fetch %s: err %v, want error %v", e.uri, e.err, wantErr)
		}
		return e
	case <-time.After(30 * time.Second):
		h.t.Fatal("no fetch")
		return fetchEvent{}
	}
}

// nextFetch is the next fetch, failed or not.
func (h *resolverHarness) nextFetch() fetchEvent {
	h.t.Helper()
	select {
	case e := <-h.fetches:
		return e
	case <-time.After(30 * time.Second):
		h.t.Fatal("no fetch")
		return fetchEvent{}
	}
}

func (h *resolverHarness) changed() {
	h.t.Helper()
	select {
	case <-h.changes:
	case <-time.After(30 * time.Second):
		h.t.Fatal("no OnChange")
	}
}

func (h *resolverHarness) noChange() {
	h.t.Helper()
	select {
	case <-h.changes:
		h.t.Fatal("unexpected OnChange")
	default:
	}
}

// advance moves the clock once the resolver has armed its next timer, and
// checks that timer's deadline.
func (h *resolverHarness) advance(wantWait, d time.Duration) {
	h.t.Helper()
	h.clock.BlockUntil(1)
	if w := h.clock.Waiters(); len(w) != 1 || w[0].Sub(h.clock.Now()) != wantWait {
		h.t.Fatalf("next fetch in %v, want %v", w, wantWait)
	}
	h.clock.Advance(d)
}

func (h *resolverHarness) resolve(uri string) (string, bool) { return h.r.Resolve(uri) }

const (
	keysV1 = `{"keys":[{"kid":"1","kty":"RSA"},{"kid":"2","kty":"RSA"}]}`
	keysV2 = `{"keys":[{"kid":"3","kty":"RSA"}]}`
)

func TestResolverFetchRefreshLastGood(t *testing.T) {
	srv := newKeyServer(t)
	srv.set("/keys", 200, keysV1)
	h := newResolverHarness(t)
	uri := srv.URL + "/keys"

	if _, ok := h.resolve(uri); ok {
		t.Fatal("first Resolve must not have the keys")
	}
	h.fetched(false)
	h.changed()
	if got, ok := h.resolve(uri); !ok || got != keysV1 {
		t.Fatalf("after fetch: %q %v", got, ok)
	}

	// Refresh: same keys in another order, no push.
	srv.set("/keys", 200, `{"keys":[{"kid":"2","kty":"RSA"},{"kid":"1","kty":"RSA"}]}`)
	h.advance(authn.DefaultJwksRefreshInterval, authn.DefaultJwksRefreshInterval)
	h.fetched(false)
	h.noChange()

	// The server fails: the last good keys stay, retried with backoff.
	srv.set("/keys", 500, strings.Repeat("x", 200))
	h.advance(authn.DefaultJwksRefreshInterval, authn.DefaultJwksRefreshInterval)
	if e := h.fetched(true); !strings.Contains(e.err.Error(), "status 500") || !strings.Contains(e.err.Error(), "(truncated)") {
		t.Errorf("error %v", e.err)
	}
	h.noChange()
	if _, ok := h.resolve(uri); !ok {
		t.Fatal("last good keys dropped on failure")
	}
	srv.set("/keys", 200, "not json")
	h.advance(authn.DefaultJwksRetryInterval, authn.DefaultJwksRetryInterval)
	h.fetched(true)
	if got, _ := h.resolve(uri); !strings.Contains(got, `"kid":"1"`) {
		t.Fatalf("a body that is no key set replaced the keys: %q", got)
	}

	// New keys: a push.
	srv.set("/keys", 200, keysV2)
	h.advance(2*authn.DefaultJwksRetryInterval, 2*authn.DefaultJwksRetryInterval)
	h.fetched(false)
	h.changed()
	if got, _ := h.resolve(uri); got != keysV2 {
		t.Fatalf("after change: %q", got)
	}
	st := h.r.Status()
	if len(st) != 1 || st[0].URI != uri || !st[0].HasKeys || st[0].Failures != 0 {
		t.Errorf("status %+v", st)
	}
}

func TestResolverUnreachableBackoff(t *testing.T) {
	srv := newKeyServer(t)
	h := newResolverHarness(t)
	uri := srv.URL + "/missing"
	h.resolve(uri)
	h.fetched(true)
	for _, wait := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute} {
		h.advance(wait, wait)
		h.fetched(true)
	}
	if _, ok := h.resolve(uri); ok {
		t.Fatal("keys without a successful fetch")
	}
	if got := h.logs.Lines("WARN", "JWKS "+uri, "status 404"); len(got) != 4 {
		t.Errorf("WARN lines %q", got)
	}
	if st := h.r.Status(); len(st) != 1 || st[0].Failures != 4 || !strings.Contains(st[0].LastError, "status 404") {
		t.Errorf("status %+v", st)
	}
	// The JWT filter fails closed meanwhile.
	cfg := authn.JwtAuthentication([]config.Config{ra("r", &v1beta1.JWTRule{Issuer: "i", JwksUri: uri})}, authn.JWTOptions{Resolver: h.r})
	if got := inline(t, cfg, "origins-0"); got != authn.PublicOnlyJwks {
		t.Fatalf("unresolved jwksUri inlined %q", got)
	}
	srv.set("/missing", 200, keysV1)
	h.advance(8*time.Minute, 8*time.Minute)
	h.fetched(false)
	h.changed()
}

func TestResolverBackoffCap(t *testing.T) {
	srv := newKeyServer(t)
	h := newResolverHarness(t, func(o *authn.ResolverOptions) { o.RetryInterval = 20 * time.Minute })
	h.resolve(srv.URL + "/x")
	h.fetched(true)
	for _, wait := range []time.Duration{20 * time.Minute, 40 * time.Minute, 60 * time.Minute, 60 * time.Minute} {
		h.advance(wait, wait)
		h.fetched(true)
	}
}

func TestResolverIssuerDiscovery(t *testing.T) {
	srv := newKeyServer(t)
	srv.set("/.well-known/openid-configuration", 200, `{"issuer":"x","jwks_uri":"`+srv.URL+`/certs"}`)
	srv.set("/certs", 200, keysV1)
	h := newResolverHarness(t)
	if _, ok := h.r.ResolveIssuer(srv.URL + "/"); ok {
		t.Fatal("first ResolveIssuer must not have the keys")
	}
	h.fetched(false)
	h.changed()
	if got, ok := h.r.ResolveIssuer(srv.URL + "/"); !ok || got != keysV1 {
		t.Fatalf("issuer keys %q %v", got, ok)
	}
	if _, ok := h.resolve(srv.URL + "/"); ok {
		t.Fatal("an issuer and a jwksUri share a cache entry")
	}
	h.fetched(true)

	srv.set("/other/.well-known/openid-configuration", 200, `{}`)
	h.r.ResolveIssuer(srv.URL + "/other")
	if e := h.fetched(true); !strings.Contains(e.err.Error(), "no jwks_uri") {
		t.Errorf("error %v", e.err)
	}
}

func TestResolverEviction(t *testing.T) {
	srv := newKeyServer(t)
	srv.set("/keys", 200, keysV1)
	srv.set("/other", 200, keysV2)
	h := newResolverHarness(t)
	uri := srv.URL + "/keys"
	h.resolve(uri)
	h.fetched(false)
	h.changed()

	// Failing for a week while in use: the keys are withdrawn (a push).
	srv.set("/keys", 500, "")
	h.advance(authn.DefaultJwksRefreshInterval, authn.DefaultJwksEviction-time.Second)
	h.fetched(true)
	h.noChange()
	h.resolve(uri)
	h.advance(time.Minute, time.Minute)
	h.fetched(true)
	h.changed()
	if _, ok := h.resolve(uri); ok {
		t.Fatal("keys not refreshed for a week are still served")
	}

	// Unused for a week: forgotten.
	h.advance(2*time.Minute, authn.DefaultJwksEviction)
	h.resolve(srv.URL + "/other")
	// a last retry of the failing /keys may still come first
	e := h.nextFetch()
	for ; e.uri != srv.URL+"/other"; e = h.nextFetch() {
		if e.uri != uri || e.err == nil {
			t.Fatalf("unexpected fetch %s: %v", e.uri, e.err)
		}
	}
	if e.err != nil {
		t.Fatalf("fetch %s: %v", e.uri, e.err)
	}
	for _, s := range h.r.Status() {
		if s.URI == uri {
			t.Errorf("unused entry kept: %+v", s)
		}
	}
}

func TestResolverNeverBlocks(t *testing.T) {
	// No Run: Resolve answers at once, however many uris.
	r := authn.NewResolver(authn.ResolverOptions{Clock: clock.NewFake(t0)})
	for i := 0; i < 100; i++ {
		if _, ok := r.Resolve("http://127.0.0.1:1/" + string(rune('a'+i%26))); ok {
			t.Fatal("keys from nowhere")
		}
	}
	if _, ok := r.Resolve(""); ok {
		t.Fatal("empty uri")
	}
	if n := len(r.Status()); n != 26 {
		t.Errorf("%d entries, want 26", n)
	}
}

func TestResolverStopCancelsFetch(t *testing.T) {
	logtest.Capture(t)
	entered := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
	}))
	defer srv.Close()
	r := authn.NewResolver(authn.ResolverOptions{Clock: clock.NewFake(t0), Timeout: time.Hour})
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		r.Run(stop)
	}()
	r.Resolve(srv.URL)
	<-entered
	close(stop)
	<-done
}

func TestResolverMetricsAndBlockedCIDRs(t *testing.T) {
	srv := newKeyServer(t)
	srv.set("/keys", 200, keysV1)
	reg := prometheus.NewRegistry()
	m, err := authn.NewResolverMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := authn.NewResolverMetrics(reg); err == nil {
		t.Error("registering twice must fail")
	}
	h := newResolverHarness(t, func(o *authn.ResolverOptions) { o.Metrics = m })
	h.resolve(srv.URL + "/keys")
	h.fetched(false)
	h.resolve(srv.URL + "/nope")
	h.fetched(true)

	blocked := newResolverHarness(t, func(o *authn.ResolverOptions) {
		o.Metrics = m
		o.Client = authn.NewHTTPClient(authn.HTTPClientOptions{BlockedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	})
	blocked.resolve(srv.URL + "/keys")
	if e := blocked.fetched(true); !strings.Contains(e.err.Error(), "blocked CIDR range 127.0.0.0/8") {
		t.Errorf("error %v", e.err)
	}
	metrics := map[string]float64{}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		metrics[mf.GetName()] = mf.GetMetric()[0].GetCounter().GetValue()
	}
	if metrics["pilot_jwks_resolver_network_fetch_success_total"] != 1 || metrics["pilot_jwks_resolver_network_fetch_fail_total"] != 2 {
		t.Errorf("metrics %v", metrics)
	}
}
