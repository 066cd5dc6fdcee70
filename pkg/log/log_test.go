package log

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestScopesLevelsAndJSON(t *testing.T) {
	now = func() time.Time { return time.Unix(0, 0).UTC() }
	defer func() { now = time.Now }()
	var buf bytes.Buffer
	model := RegisterScope("model-test", "test scope")
	ads := RegisterScope("ads-test", "test scope")
	if err := Configure(Options{OutputLevels: "model-test:debug,ads-test:warn", JSON: true, Out: &buf}); err != nil {
		t.Fatal(err)
	}
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
	if rec["scope"] != "ads-test" || rec["msg"] != "shown" || rec["key"] != "v" || rec["level"] != "WARN" {
		t.Errorf("record %v", rec)
	}
	if !strings.Contains(lines[0], `"msg":"visible 1"`) {
		t.Errorf("first line %s", lines[0])
	}
	if err := Configure(Options{OutputLevels: "model-test:loud"}); err == nil || !strings.Contains(err.Error(), "loud") {
		t.Errorf("bad level accepted: %v", err)
	}
}

func TestSlogAdapterFollowsScopeLevel(t *testing.T) {
	var buf bytes.Buffer
	s := RegisterScope("slog-test", "")
	if err := Configure(Options{OutputLevels: "slog-test:error", Out: &buf}); err != nil {
		t.Fatal(err)
	}
	l := s.Slog()
	l.Warn("quiet")
	l.Error("loud", "n", 1)
	if strings.Contains(buf.String(), "quiet") || !strings.Contains(buf.String(), "loud") || !strings.Contains(buf.String(), "scope=slog-test") {
		t.Errorf("output %q", buf.String())
	}
}
