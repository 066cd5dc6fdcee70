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
	var out []string
	for _, d := range Differences(path, got, want, false) {
		gb, _ := json.Marshal(d.Got)
		wb, _ := json.Marshal(d.Want)
		out = append(out, d.Path+" differs\n got  "+clip(gb)+"\n want "+clip(wb))
	}
	return out
}

// Difference is one path where two decoded JSON values differ, with both
// values (nil: absent).
type Difference struct {
	Path      string
	Got, Want any
}

// Differences lists the paths where two decoded JSON values differ, in
// path order: objects key by key, lists of equal length element by
// element, and, with byName, lists of different lengths whose elements
// are objects with distinct "name" fields element by name ("[name=x]").
// Any other difference is one entry for the whole value.
func Differences(path string, got, want any, byName bool) []Difference {
	if reflect.DeepEqual(got, want) {
		return nil
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		var out []Difference
		for _, k := range UnionKeys(g, w) {
			out = append(out, Differences(join(path, k), g[k], w[k], byName)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok {
			break
		}
		if len(g) == len(w) {
			var out []Difference
			for i := range w {
				out = append(out, Differences(path+"["+strconv.Itoa(i)+"]", g[i], w[i], byName)...)
			}
			return out
		}
		if gn, wn := byNames(g), byNames(w); byName && gn != nil && wn != nil {
			var out []Difference
			for _, n := range UnionKeys(gn, wn) {
				out = append(out, Differences(path+"[name="+n+"]", gn[n], wn[n], byName)...)
			}
			return out
		}
	}
	return []Difference{{Path: path, Got: got, Want: want}}
}

// byNames indexes a list of objects by their "name" field, nil when an
// element has none or two share one.
func byNames(l []any) map[string]any {
	out := map[string]any{}
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return nil
		}
		n, ok := m["name"].(string)
		if !ok {
			return nil
		}
		if _, dup := out[n]; dup {
			return nil
		}
		out[n] = e
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// UnionKeys is the sorted union of two maps' keys.
func UnionKeys[V any](a, b map[string]V) []string {
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
