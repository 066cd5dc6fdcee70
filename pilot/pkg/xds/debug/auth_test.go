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
