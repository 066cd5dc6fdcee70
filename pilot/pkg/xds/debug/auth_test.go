package debug_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/xds/debug"
	"github.com/meshplane/istiod/pkg/diag"
)

// Off loopback, the debug endpoints need a credential: the system
// namespace sees everything, another namespace only the config dumps of
// its own proxies; no credential is 401, the wrong namespace 403.
func TestDebugEndpointsOffLoopback(t *testing.T) {
	auth := func(r *http.Request) (string, error) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return "", errors.New("no bearer token")
		}
		return tok, nil // the token names the caller's namespace
	}
	s := newXDSServerForDebug(t)
	mux := http.NewServeMux()
	debug.New(debug.Options{Problems: diag.New(nil), XDS: s.DS, Authenticate: auth, SystemNamespace: "istio-system"}).Install(mux)
	for _, c := range []struct {
		remote, token, path string
		want                int
	}{
		{"127.0.0.1:1", "", "/debug/warningz", 200},
		{"10.1.2.3:5", "", "/debug/warningz", 401},
		{"10.1.2.3:5", "istio-system", "/debug/warningz", 200},
		{"10.1.2.3:5", "bookinfo", "/debug/warningz", 403},
		{"10.1.2.3:5", "bookinfo", "/debug/config_dump?proxyID=app-1.default", 403},
		{"10.1.2.3:5", "default", "/debug/config_dump?proxyID=app-1.default", 200},
		{"10.1.2.3:5", "istio-system", "/debug/config_dump?proxyID=app-1.default", 200},
	} {
		req := httptest.NewRequest("GET", c.path, nil)
		req.RemoteAddr = c.remote
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s %s as %q: %d, want %d (%s)", c.remote, c.path, c.token, rec.Code, c.want, rec.Body.String())
		}
	}
	// without an authenticator, only loopback
	mux = http.NewServeMux()
	debug.New(debug.Options{Problems: diag.New(nil)}).Install(mux)
	req := httptest.NewRequest("GET", "/debug/warningz", nil)
	req.RemoteAddr = "10.1.2.3:5"
	req.Header.Set("Authorization", "Bearer istio-system")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	if rec.Code != 403 {
		t.Errorf("without an authenticator: %d", rec.Code)
	}
}

// Which peers count as local: loopback does, but 127.0.0.6 (the source
// Envoy gives inbound traffic it passes through, so anyone who reaches the
// pod when istiod has a sidecar), in any spelling, does not; nor does a
// forwarding header naming loopback. Those callers need a valid token.
func TestDebugLocalPeers(t *testing.T) {
	auth := func(r *http.Request) (string, error) {
		if r.Header.Get("Authorization") != "Bearer valid" {
			return "", errors.New("no valid token")
		}
		return "istio-system", nil
	}
	mux := http.NewServeMux()
	debug.New(debug.Options{Problems: diag.New(nil), Authenticate: auth, SystemNamespace: "istio-system"}).Install(mux)
	for _, c := range []struct {
		remote        string
		forwardedFor  string
		noToken, good int // status without a token, with a valid one
	}{
		{remote: "127.0.0.1:4000", noToken: 200, good: 200},
		{remote: "127.1.2.3:4000", noToken: 200, good: 200},
		{remote: "[::1]:4000", noToken: 200, good: 200},
		{remote: "[::ffff:127.0.0.1]:4000", noToken: 200, good: 200},
		{remote: "127.0.0.6:4000", noToken: 401, good: 200},
		{remote: "[::ffff:127.0.0.6]:4000", noToken: 401, good: 200},
		{remote: "[::6]:4000", noToken: 401, good: 200}, // Envoy's IPv6 passthrough source
		{remote: "10.1.2.3:4000", noToken: 401, good: 200},
		{remote: "10.1.2.3:4000", forwardedFor: "127.0.0.1", noToken: 401, good: 200},
		{remote: "127.0.0.6:4000", forwardedFor: "127.0.0.1", noToken: 401, good: 200},
	} {
		for _, token := range []string{"", "invalid", "valid"} {
			req := httptest.NewRequest("GET", "/debug/warningz", nil)
			req.RemoteAddr = c.remote
			if c.forwardedFor != "" {
				req.Header.Set("X-Forwarded-For", c.forwardedFor)
				req.Header.Set("Forwarded", "for="+c.forwardedFor)
			}
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			want := c.noToken
			if token == "valid" {
				want = c.good
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			if rec.Code != want {
				t.Errorf("from %s (forwarded for %q) with token %q: %d, want %d", c.remote, c.forwardedFor, token, rec.Code, want)
			}
		}
	}
}
