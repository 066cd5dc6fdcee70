package golden

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// Diff lists the paths where two decoded JSON values differ, each with
// both values (clipped), sorted by path.
func Diff(path string, got, want any) []string {
	if reflect.DeepEqual(got, want) {
		return nil
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		var out []string
		for _, k := range UnionKeys(g, w) {
			out = append(out, Diff(join(path, k), g[k], w[k])...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			break
		}
		var out []string
		for i := range w {
			out = append(out, Diff(path+"["+strconv.Itoa(i)+"]", g[i], w[i])...)
		}
		return out
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	return []string{path + " differs\n got  " + clip(gb) + "\n want " + clip(wb)}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// UnionKeys is the sorted union of two objects' keys.
func UnionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

// Files checks one test's golden files and remembers which it checked.
type Files struct {
	seen map[string]bool
}

// Check compares got with file, or rewrites file with -update. A JSON
// golden that differs is reported path by path.
func (f *Files) Check(t testing.TB, file string, got []byte) {
	t.Helper()
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	f.seen[filepath.Clean(file)] = true
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	var g, w any
	if json.Unmarshal(got, &g) == nil && json.Unmarshal(want, &w) == nil {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", file, strings.Join(Diff("", g, w), "\n"))
		return
	}
	t.Errorf("%s differs (go test -update rewrites it)\n got: %.2000s", file, got)
}

// Orphans fails for every file matching glob that Check did not see.
func (f *Files) Orphans(t testing.TB, glob string) {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if !f.seen[filepath.Clean(file)] {
			t.Errorf("orphaned golden file %s", file)
		}
	}
}
