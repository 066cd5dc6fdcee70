package golden

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDiffNamesEveryDifferingPath(t *testing.T) {
	got := decode(t, `{"a":1,"b":{"c":[1,2],"d":"x"},"e":true}`)
	want := decode(t, `{"a":1,"b":{"c":[1,3],"d":"y"},"f":false}`)
	d := strings.Join(Diff("", got, want), "\n")
	for _, p := range []string{"b.c[1] differs", "b.d differs", "e differs", "f differs"} {
		if !strings.Contains(d, p) {
			t.Errorf("diff lacks %q:\n%s", p, d)
		}
	}
	if strings.Contains(d, "a differs") {
		t.Errorf("equal path reported:\n%s", d)
	}
	if Diff("", got, got) != nil {
		t.Error("a value differs from itself")
	}
}

// fakeT records failures instead of failing.
type fakeT struct {
	testing.TB
	errors []string
}

func (f *fakeT) Helper()                        {}
func (f *fakeT) Errorf(format string, a ...any) { f.errors = append(f.errors, format) }

func TestFilesCheckAndOrphans(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.golden.json"), filepath.Join(dir, "b.golden.json")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte(`{"x":1}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ft := &fakeT{TB: t}
	var f Files
	f.Check(ft, a, []byte(`{"x":1}`))
	if len(ft.errors) != 0 {
		t.Fatalf("equal golden reported: %v", ft.errors)
	}
	f.Check(ft, a, []byte(`{"x":2}`))
	if len(ft.errors) != 1 {
		t.Fatalf("differing golden: %v", ft.errors)
	}
	f.Orphans(ft, filepath.Join(dir, "*.golden.json"))
	if len(ft.errors) != 2 {
		t.Errorf("b is an orphan: %v", ft.errors)
	}
}
