package log

import (
	"bytes"
	"encoding/json"
	"errors"
	stdlog "log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

func TestScopesLevelsAndJSON(t *testing.T) {
	model := RegisterScope("model-test", "test scope")
	ads := RegisterScope("ads-test", "test scope")
	reset(t)
	buf := capture(t, Options{OutputLevels: "model-test:debug,ads-test:warn", JSON: true})
	model.Debugf("visible %d", 1)
	ads.Infof("hidden")
	ads.Warn("shown", "key", "v")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines: %q", len(lines), buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["scope"] != "ads-test" || rec["msg"] != "shown" || rec["key"] != "v" || rec["level"] != "warn" {
		t.Errorf("record %v", rec)
	}
	if !strings.Contains(lines[0], `"msg":"visible 1"`) {
		t.Errorf("first line %s", lines[0])
	}
}

// Level lists are Istio's: a bare level is the default scope's, "all" is
// every scope, and a malformed entry fails with Istio's words, changing
// nothing.
func TestLevelLists(t *testing.T) {
	a, b := RegisterScope("lvl-a", ""), RegisterScope("lvl-b", "")
	reset(t)
	capture(t, Options{OutputLevels: "debug"})
	if Default.Level() != DebugLevel || a.Level() != InfoLevel {
		t.Errorf("bare level: default %v, lvl-a %v", Default.Level(), a.Level())
	}
	if err := Configure(Options{OutputLevels: "all:error,lvl-b:debug"}); err != nil {
		t.Fatal(err)
	}
	if a.Level() != ErrorLevel || b.Level() != DebugLevel || Default.Level() != ErrorLevel {
		t.Errorf("all: %v %v %v", a.Level(), b.Level(), Default.Level())
	}
	if err := Configure(Options{OutputLevels: "lvl-a:fatal"}); err != nil {
		t.Fatal(err)
	}
	if a.Enabled(ErrorLevel) {
		t.Error("fatal lets error through")
	}
	for spec, want := range map[string]string{
		"lvl-a:loud":   "invalid output level 'loud'",
		"lvl-a:info:x": "invalid output level format 'lvl-a:info:x'",
		"x.y:info":     "invalid output level format 'x.y:info'",
	} {
		err := Configure(Options{OutputLevels: "lvl-a:debug," + spec})
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", spec, err, want)
		}
		if a.Level() != FatalLevel {
			t.Errorf("%s: a failed Configure changed a level", spec)
		}
	}
	if err := Configure(Options{StackTraceLevels: "lvl-b:bogus"}); err == nil {
		t.Error("bad stack trace level accepted")
	}
	// a scope named before it is registered keeps its level
	if err := Configure(Options{OutputLevels: "lvl-late:debug"}); err != nil {
		t.Fatal(err)
	}
	late := RegisterScope("lvl-late", "registered late")
	if late.Level() != DebugLevel || late.Description() != "registered late" {
		t.Errorf("late scope %v %q", late.Level(), late.Description())
	}
}

func TestSlogAdapterFollowsScopeLevel(t *testing.T) {
	s := RegisterScope("slog-test", "")
	reset(t)
	buf := capture(t, Options{OutputLevels: "slog-test:error"})
	l := s.Slog()
	l.Warn("quiet")
	l.Error("loud", "n", 1)
	l.With("a", 1).WithGroup("g").With("b", 2).Error("grouped", slog.Group("h", "c", 3), "d", 4)
	out := buf.String()
	if strings.Contains(out, "quiet") || !strings.Contains(out, "\terror\tslog-test\tloud\tn=1\n") {
		t.Errorf("output %q", out)
	}
	if !strings.Contains(out, "\tgrouped\ta=1 g.b=2 g.h.c=3 g.d=4\n") {
		t.Errorf("groups %q", out)
	}
}

// Configure sends the standard library's logger (net/http's errors, for
// instance) and slog's default through the default scope, as Istio
// redirects the standard logger into its own.
func TestStandardLoggersAreRedirected(t *testing.T) {
	buf := capture(t, Options{})
	stdlog.Printf("http: TLS handshake error from %s", "1.2.3.4:5")
	slog.Info("from slog", "k", "v")
	out := buf.String()
	if !strings.Contains(out, "\tinfo\thttp: TLS handshake error from 1.2.3.4:5\n") ||
		!strings.Contains(out, "\tinfo\tfrom slog\tk=v\n") {
		t.Errorf("output %q", out)
	}
}

// --log_target names stdout, stderr and files (appended to); several get
// every line.
func TestOutputPaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "istiod.log")
	if err := os.WriteFile(file, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	now = func() time.Time { return fixedTime }
	t.Cleanup(func() { now = time.Now; _ = Configure(Options{}) })
	if err := Configure(Options{OutputPaths: []string{"stdout", file, "file://" + file + "2"}, Stdout: &stdout, Stderr: &stderr}); err != nil {
		t.Fatal(err)
	}
	Infof("to all")
	line := fixedStamp + "\tinfo\tto all\n"
	if stdout.String() != line || stderr.Len() != 0 {
		t.Errorf("stdout %q stderr %q", stdout.String(), stderr.String())
	}
	if err := Configure(Options{OutputPaths: []string{"stderr"}, Stdout: &stdout, Stderr: &stderr}); err != nil {
		t.Fatal(err)
	}
	Infof("to stderr")
	if stderr.String() != fixedStamp+"\tinfo\tto stderr\n" {
		t.Errorf("stderr %q", stderr.String())
	}
	for f, want := range map[string]string{file: "before\n" + line, file + "2": line} {
		if b, err := os.ReadFile(f); err != nil || string(b) != want {
			t.Errorf("%s: %q %v", f, b, err)
		}
	}
	if err := Configure(Options{OutputPaths: []string{filepath.Join(dir, "missing", "x.log")}}); err == nil ||
		!strings.Contains(err.Error(), "--log_target") {
		t.Errorf("unopenable target: %v", err)
	}
}

// --log_rotate tees the log into a file rotated by size, keeping
// --log_rotate_max_backups old files.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rotated.log")
	var out bytes.Buffer
	t.Cleanup(func() { _ = Configure(Options{}) })
	if err := Configure(Options{Out: &out, RotateOutputPath: file, RotationMaxSize: 1, RotationMaxBackups: 1,
		RotationMaxAge: DefaultRotationMaxAge}); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 100<<10)
	for range 25 { // 2.5 MB through a 1 MB file
		Infof("%s", big)
	}
	if err := Close(); err != nil {
		t.Fatal(err)
	}
	if out.Len() < 25*len(big) {
		t.Errorf("the main output got %d bytes", out.Len())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	// lumberjack removes old backups asynchronously: at most the current
	// file and one or two backups are left
	if len(names) < 2 || len(names) > 3 || !strings.Contains(strings.Join(names, " "), "rotated.log") {
		t.Errorf("files %v", names)
	}
	st, err := os.Stat(file)
	if err != nil || st.Size() > 1<<20 {
		t.Errorf("current file %v %v", st, err)
	}
}

// The Kubernetes libraries' klog writes through the klog scope, with
// Istio's mapping: verbosity above 3 is debug, errors are "<err>: <msg>".
func TestKlogIsRedirected(t *testing.T) {
	reset(t)
	buf := capture(t, Options{})
	klog.Info("informer started\n")
	klog.V(4).Info("not at info")
	klog.ErrorS(errors.New("boom"), "watch failed", "resource", "pods")
	klog.Flush()
	out := buf.String()
	for _, want := range []string{"\tinfo\tklog\tinformer started\n", "\terror\tklog\tboom: watch failed\tresource=pods\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in %q", want, out)
		}
	}
	if strings.Contains(out, "not at info") {
		t.Errorf("verbosity 4 at info: %q", out)
	}
}
