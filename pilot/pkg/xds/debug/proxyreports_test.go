package debug_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pilot/pkg/xds/debug"
)

func TestPolicyz(t *testing.T) {
	type report struct {
		Proxy string `json:"proxy"`
	}
	src := func(id string) (any, bool) {
		switch id {
		case "app-1.default":
			return report{Proxy: id}, true
		case "early.default":
			return nil, true
		}
		return nil, false
	}
	mux := http.NewServeMux()
	d := debug.New(debug.Options{
		Authenticate: func(r *http.Request) (string, error) {
			if ns, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				return ns, nil
			}
			return "", errors.New("no token")
		},
		SystemNamespace: "istio-system",
	})
	d.AddPolicyz(src)
	d.Install(mux)
	get := func(remote, token, path string) (int, string) {
		req := httptest.NewRequest("GET", path, nil)
		req.RemoteAddr = remote
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	code, body := get("127.0.0.1:1", "", "/debug/policyz?proxyID=app-1.default")
	var got report
	if code != 200 || json.Unmarshal([]byte(body), &got) != nil || got.Proxy != "app-1.default" {
		t.Errorf("connected proxy: %d %s", code, body)
	}
	for _, c := range []struct {
		remote, token, path string
		want                int
	}{
		{"127.0.0.1:1", "", "/debug/policyz", http.StatusBadRequest},
		{"127.0.0.1:1", "", "/debug/policyz?proxyID=nobody.default", http.StatusNotFound},
		{"127.0.0.1:1", "", "/debug/policyz?proxyID=early.default", http.StatusServiceUnavailable},
		{"10.1.2.3:5", "istio-system", "/debug/policyz?proxyID=app-1.default", 200},
		// root-namespace policies are not the caller's to read
		{"10.1.2.3:5", "default", "/debug/policyz?proxyID=app-1.default", http.StatusForbidden},
		{"10.1.2.3:5", "", "/debug/policyz?proxyID=app-1.default", http.StatusUnauthorized},
	} {
		if code, body := get(c.remote, c.token, c.path); code != c.want {
			t.Errorf("%s %s as %q: %d, want %d (%s)", c.remote, c.path, c.token, code, c.want, body)
		}
	}
	if _, body := get("127.0.0.1:1", "", "/debug/list"); !strings.Contains(body, `"policyz"`) {
		t.Errorf("/debug/list lacks policyz: %s", body)
	}

	// without a source the endpoint is not served
	mux = http.NewServeMux()
	d = debug.New(debug.Options{})
	d.AddPolicyz(nil)
	d.Install(mux)
	req := httptest.NewRequest("GET", "/debug/policyz?proxyID=app-1.default", nil)
	req.RemoteAddr = "127.0.0.1:1"
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	if rec.Code == 200 {
		t.Errorf("served without a source: %s", rec.Body.String())
	}
}
