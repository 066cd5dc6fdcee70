package app

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// debugServer stands for istiod's monitoring port on 127.0.0.1; it
// returns the port and records the requests.
func debugServer(t *testing.T) (port string, got *[]string) {
	t.Helper()
	var reqs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		reqs = append(reqs, r.Method+" "+r.URL.RequestURI()+" "+string(b))
		switch r.URL.Path {
		case "/debug/syncz":
			_, _ = w.Write([]byte(`[{"proxy":"a.ns"}]`))
		case "/fail":
			http.Error(w, "boom", http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port, &reqs
}

// `istiod request METHOD PATH [BODY]` is pilot-discovery's request: the
// body of the local istiod's answer on stdout, then a newline; 404 is not
// an error, other statuses above 399 are.
func TestRequest(t *testing.T) {
	port, reqs := debugServer(t)
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     string
		stderr     string
		wantRecord string
	}{
		{"get", []string{"GET", "/debug/syncz"}, 0, `[{"proxy":"a.ns"}]` + "\n", "", "GET /debug/syncz "},
		{"no leading slash", []string{"GET", "debug/syncz?proxyID=x"}, 0, `[{"proxy":"a.ns"}]` + "\n", "", "GET /debug/syncz?proxyID=x "},
		{"body", []string{"POST", "/debug/syncz", `{"a":1}`, "ignored"}, 0, `[{"proxy":"a.ns"}]` + "\n", "", `POST /debug/syncz {"a":1}`},
		{"404 prints", []string{"GET", "/nothing"}, 0, "404 page not found\n\n", "", "GET /nothing "},
		{"500 fails", []string{"GET", "/fail"}, 1, "", "Error: received unsuccessful status code 500: boom\n\n", "GET /fail "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			*reqs = nil
			var out, errb bytes.Buffer
			code := Main(append([]string{"request", "--debug-port", port}, tc.args...), &out, &errb)
			if code != tc.code || out.String() != tc.stdout || errb.String() != tc.stderr {
				t.Errorf("exit %d stdout %q stderr %q, want %d %q %q", code, out.String(), errb.String(), tc.code, tc.stdout, tc.stderr)
			}
			if len(*reqs) != 1 || (*reqs)[0] != tc.wantRecord {
				t.Errorf("requests %q, want %q", *reqs, tc.wantRecord)
			}
		})
	}
}

func TestRequestCommandLine(t *testing.T) {
	if f := NewRootCommand(io.Discard, io.Discard); f != nil {
		c, _, err := f.Find([]string{"request"})
		if err != nil || c.Flags().Lookup("debug-port").DefValue != "15014" {
			t.Errorf("request: %v, --debug-port default %v", err, c.Flags().Lookup("debug-port"))
		}
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"request", "GET"}, &out, &errb); code != 1 ||
		errb.String() != "Error: requires at least 2 arg(s), only received 1\nRun 'istiod request --help' for usage.\n" {
		t.Errorf("one argument: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := Main([]string{"request", "--debug-port", "70000", "GET", "/x"}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "--debug-port 70000: not a port") {
		t.Errorf("bad port: %d %q", code, errb.String())
	}
	// nothing listens on port 1 of the loopback address
	errb.Reset()
	if code := Main([]string{"request", "--debug-port", "1", "GET", "/x"}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "127.0.0.1:1") || strings.Contains(errb.String(), "--help") {
		t.Errorf("refused: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := Main([]string{"request", "--debug-port", "1", "BAD METHOD", "/x"}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), `invalid method "BAD METHOD"`) {
		t.Errorf("bad method: %d %q", code, errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q", out.String())
	}
}

// Invoked as pilot-discovery (Istio's binary name), the commands are the
// same and the messages name pilot-discovery.
func TestMainAsPilotDiscovery(t *testing.T) {
	port, _ := debugServer(t)
	var out, errb bytes.Buffer
	if code := MainAs("pilot-discovery", []string{"request", "--debug-port", port, "GET", "/debug/syncz"}, &out, &errb); code != 0 ||
		out.String() != `[{"proxy":"a.ns"}]`+"\n" {
		t.Errorf("request: %d %q %q", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := MainAs("pilot-discovery", []string{"bogus"}, &out, &errb); code != 1 ||
		errb.String() != "Error: unknown command \"bogus\" for \"pilot-discovery\"\nRun 'pilot-discovery --help' for usage.\n" {
		t.Errorf("bogus: %d %q", code, errb.String())
	}
}
