package memlimit_test

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/meshplane/istiod/pkg/memlimit"
)

func cgroup(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCgroupLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
		ok    bool
		err   bool
	}{
		{"v2 limit", map[string]string{"memory.max": "1073741824\n"}, 1 << 30, true, false},
		{"v2 unlimited", map[string]string{"memory.max": "max\n"}, 0, false, false},
		{"v1 limit", map[string]string{"memory/memory.limit_in_bytes": "536870912\n"}, 512 << 20, true, false},
		{"v1 unlimited", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, false, false},
		{"no cgroup", nil, 0, false, false},
		{"garbage", map[string]string{"memory.max": "lots\n"}, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := memlimit.CgroupLimit(cgroup(t, tc.files))
			if got != tc.want || ok != tc.ok || (err != nil) != tc.err {
				t.Errorf("got %d %v %v, want %d %v err=%v", got, ok, err, tc.want, tc.ok, tc.err)
			}
		})
	}
}

func TestApply(t *testing.T) {
	defer debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "")
	soft, msg := memlimit.Apply(cgroup(t, map[string]string{"memory.max": "1000000000"}))
	if soft != 900000000 || debug.SetMemoryLimit(-1) != 900000000 || !strings.Contains(msg, "90%") {
		t.Errorf("soft %d, runtime %d, %q", soft, debug.SetMemoryLimit(-1), msg)
	}
	t.Setenv("GOMEMLIMIT", "2GiB")
	if soft, msg := memlimit.Apply(cgroup(t, map[string]string{"memory.max": "1000"})); soft != 0 || !strings.Contains(msg, "explicitly") {
		t.Errorf("explicit GOMEMLIMIT overridden: %d %q", soft, msg)
	}
}
