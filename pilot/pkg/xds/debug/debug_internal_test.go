package debug

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pkg/diag"
)

func TestDebugOnlyForLoopback(t *testing.T) {
	mux := http.NewServeMux()
	New(Options{Problems: diag.New(nil)}).Install(mux)
	for _, c := range []struct {
		remote string
		want   int
	}{
		{"127.0.0.1:5555", 200},
		{"[::1]:5555", 200},
		{"127.0.0.6:5555", 403}, // Envoy's passthrough source is not local
		{"10.1.2.3:5555", 403},
		{"garbage", 403},
	} {
		req := httptest.NewRequest("GET", "/debug/warningz", nil)
		req.RemoteAddr = c.remote
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s: %d, want %d", c.remote, rec.Code, c.want)
		}
	}
	req := httptest.NewRequest("GET", "/debug/list", nil)
	req.RemoteAddr = "127.0.0.1:1"
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"configz"`) {
		t.Errorf("list: %d %s", rec.Code, rec.Body.String())
	}
}
