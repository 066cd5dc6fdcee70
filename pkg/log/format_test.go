package log

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The expectations below are written from Istio's pkg/log, not from this
// code: its encoder config (config.go, defaultEncoderConfig) names the keys
// time, level, scope, caller, msg and stack, encodes levels lowercase
// (zapcore.LowercaseLevelEncoder), callers short (ShortCallerEncoder: last
// directory/file:line) and times with its formatDate (UTC, six digits of
// microseconds, truncated, then "Z"). zap's console encoder joins time,
// level, name and caller with tabs, then a tab and the message; Istio's
// Scope leaves the name empty for the default scope (nameToEmit) and, in
// text mode, appends its labels to the message after a tab as
// key=fmt.Sprint(value) separated by spaces (emitWithTime). zap's JSON
// encoder writes level, time, scope, caller, msg, the fields, then stack.

// fixedTime is 07:08:09.123456789 on 5 March 2024 in UTC+2: formatDate
// turns it to UTC and truncates the nanoseconds to microseconds.
var fixedTime = time.Date(2024, 3, 5, 9, 8, 9, 123456789, time.FixedZone("x", 2*3600))

const fixedStamp = "2024-03-05T07:08:09.123456Z"

// capture configures the output into a buffer with the fixed clock until
// the test ends.
func capture(t *testing.T, o Options) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	now = func() time.Time { return fixedTime }
	o.Out = &buf
	if err := Configure(o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		now = time.Now
		_ = Configure(Options{})
	})
	return &buf
}

// reset gives every scope its level, stack trace level and caller setting
// back when the test ends, and registers scopes first.
func reset(t *testing.T) {
	type state struct {
		level, stack Level
		callers      bool
	}
	saved := map[*Scope]state{}
	for _, s := range Scopes() {
		saved[s] = state{s.Level(), s.StackTraceLevel(), s.LogCallers()}
	}
	t.Cleanup(func() {
		for _, s := range Scopes() {
			st, ok := saved[s]
			if !ok {
				st = state{InfoLevel, NoneLevel, false}
			}
			s.SetLevel(st.level)
			s.SetStackTraceLevel(st.stack)
			s.SetLogCallers(st.callers)
		}
	})
}

func TestTextFormatIsIstios(t *testing.T) {
	ads := RegisterScope("fmt-ads", "")
	buf := capture(t, Options{})
	Infof("starting %s", "istiod")
	ads.Warnf("push of %d proxies", 3)
	ads.Info("pushed", "proxy", "a.ns", "n", 2, "took", 1500*time.Millisecond, "err", errors.New("boom"))
	ads.Error("")
	want := fixedStamp + "\tinfo\tstarting istiod\n" + // default scope: no scope column
		fixedStamp + "\twarn\tfmt-ads\tpush of 3 proxies\n" +
		fixedStamp + "\tinfo\tfmt-ads\tpushed\tproxy=a.ns n=2 took=1.5s err=boom\n" +
		fixedStamp + "\terror\tfmt-ads\t\n"
	if got := buf.String(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestJSONFormatIsIstios(t *testing.T) {
	ads := RegisterScope("fmt-json", "")
	buf := capture(t, Options{JSON: true})
	Infof("plain")
	ads.Info("pushed", "proxy", "a.ns", "n", 2, "ok", true, "took", 1500*time.Millisecond, "err", errors.New("boom"),
		"html", "<a&b>", "list", []string{"x"}, "nothing", nil)
	// zap escapes '"', '\', \n, \r, \t, other control bytes as \u00xx and
	// invalid UTF-8 as \ufffd; it leaves <, >, & and U+2028 alone
	ads.Warnf("q\"b\\n\nr\rt\tc\x01 bad\xff <&> \u2028")
	want := `{"level":"info","time":"` + fixedStamp + `","msg":"plain"}` + "\n" +
		`{"level":"info","time":"` + fixedStamp + `","scope":"fmt-json","msg":"pushed","proxy":"a.ns","n":2,"ok":true,` +
		`"took":"1.5s","err":"boom","html":"<a&b>","list":["x"],"nothing":null}` + "\n" +
		`{"level":"warn","time":"` + fixedStamp + `","scope":"fmt-json","msg":"q\"b\\n\nr\rt\tc\u0001 bad\ufffd <&> ` + "\u2028" + `"}` + "\n"
	if got := buf.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// a field encoding/json refuses is zap's <key>Error with the reason
	buf.Reset()
	ads.Info("bad", "ch", make(chan int))
	if got := buf.String(); !strings.Contains(got, `"msg":"bad","chError":"json: unsupported type: chan int"}`) {
		t.Errorf("unencodable field: %s", got)
	}
}

func TestCallerColumn(t *testing.T) {
	s := RegisterScope("fmt-caller", "")
	reset(t)
	buf := capture(t, Options{LogCallers: "fmt-caller"})
	_, _, line, _ := runtime.Caller(0)
	s.Infof("here") // line+1
	Infof("default has none")
	s.Info("kv", "k", "v")    // line+3
	s.Slog().Info("via slog") // line+4
	want := fmt.Sprintf("%s\tinfo\tfmt-caller\tlog/format_test.go:%d\there\n", fixedStamp, line+1) +
		fixedStamp + "\tinfo\tdefault has none\n" +
		fmt.Sprintf("%s\tinfo\tfmt-caller\tlog/format_test.go:%d\tkv\tk=v\n", fixedStamp, line+3)
	got := buf.String()
	if !strings.HasPrefix(got, want) {
		t.Fatalf("got\n%q\nwant prefix\n%q", got, want)
	}
	// slog stamps its own time
	if rest := got[len(want):]; !strings.HasSuffix(rest, fmt.Sprintf("\tinfo\tfmt-caller\tlog/format_test.go:%d\tvia slog\n", line+4)) {
		t.Errorf("slog line %q", rest)
	}

	buf.Reset()
	if err := Configure(Options{LogCallers: "all", Out: buf, JSON: true}); err != nil {
		t.Fatal(err)
	}
	_, _, line, _ = runtime.Caller(0)
	Infof("everyone")
	if want := fmt.Sprintf(`{"level":"info","time":"%s","caller":"log/format_test.go:%d","msg":"everyone"}`+"\n", fixedStamp, line+1); buf.String() != want {
		t.Errorf("got %s want %s", buf.String(), want)
	}
}

func TestStackTraces(t *testing.T) {
	s := RegisterScope("fmt-stack", "")
	reset(t)
	buf := capture(t, Options{StackTraceLevels: "fmt-stack:error"})
	s.Warnf("no stack")
	s.Errorf("with stack")
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if lines[0] != fixedStamp+"\twarn\tfmt-stack\tno stack" {
		t.Errorf("line 0 %q", lines[0])
	}
	if lines[1] != fixedStamp+"\terror\tfmt-stack\twith stack" {
		t.Errorf("line 1 %q", lines[1])
	}
	// zap's stack format: the function, then a tab and file:line, per
	// frame; the first frame is the caller
	if len(lines) < 4 || lines[2] != "github.com/meshplane/istiod/pkg/log.TestStackTraces" ||
		!strings.HasPrefix(lines[3], "\t") || !strings.Contains(lines[3], "format_test.go:") {
		t.Errorf("stack %q", lines[2:])
	}

	buf.Reset()
	if err := Configure(Options{Out: buf, JSON: true}); err != nil {
		t.Fatal(err)
	}
	s.Error("json", "k", 1)
	if got := buf.String(); !strings.HasPrefix(got, `{"level":"error","time":"`+fixedStamp+`","scope":"fmt-stack","msg":"json","k":1,"stack":"github.com/meshplane/istiod/pkg/log.TestStackTraces\n\t`) {
		t.Errorf("json stack %s", got)
	}
}

func TestDateFormat(t *testing.T) {
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), "0001-01-01T00:00:00.000000Z"},
		{time.Date(2099, 12, 31, 23, 59, 59, 999999999, time.UTC), "2099-12-31T23:59:59.999999Z"},
		{time.Date(2024, 1, 1, 0, 30, 0, 1000, time.FixedZone("y", -3600)), "2024-01-01T01:30:00.000001Z"},
	} {
		if got := string(appendDate(nil, tc.t)); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.t, got, tc.want)
		}
	}
}
