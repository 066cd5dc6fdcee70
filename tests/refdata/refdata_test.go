package refdata

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Fatalf and Skipf instead of ending
// the test (Dir returns after calling them).
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }
func (r *recorder) Skipf(format string, args ...any)  { r.skip = fmt.Sprintf(format, args...) }

// tree makes <tmp>/repo/go.mod, <tmp>/repo/pkg/sub and
// <tmp>/shared/reference/bookinfo/real/mesh.json, and returns <tmp>.
func tree(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	for _, d := range []string{"repo/pkg/sub", "shared/reference/bookinfo/real"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"repo/go.mod", "shared/reference/bookinfo/real/mesh.json"} {
		if err := os.WriteFile(filepath.Join(tmp, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tmp
}

func TestDirFindsReferenceBesideModuleRoot(t *testing.T) {
	tmp := tree(t)
	t.Chdir(filepath.Join(tmp, "repo", "pkg", "sub"))
	t.Setenv(SkipEnv, "")
	r := &recorder{TB: t}
	for _, rel := range []string{"bookinfo", "bookinfo/real/mesh.json"} {
		got := Dir(r, rel)
		want := filepath.Join(tmp, "shared", "reference", filepath.FromSlash(rel))
		if r.fatal != "" || r.skip != "" {
			t.Fatalf("Dir(%q): fatal %q skip %q", rel, r.fatal, r.skip)
		}
		if gotAbs, _ := filepath.EvalSymlinks(got); gotAbs != mustEval(t, want) {
			t.Errorf("Dir(%q) = %s, want %s", rel, got, want)
		}
	}
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	e, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestDirFailsWhenMissing(t *testing.T) {
	tmp := tree(t)
	t.Chdir(filepath.Join(tmp, "repo", "pkg"))
	t.Setenv(SkipEnv, "")
	r := &recorder{TB: t}
	if got := Dir(r, "bookinfo/real/absent.json"); got != "" {
		t.Errorf("Dir returned %q for a missing file", got)
	}
	if r.skip != "" {
		t.Errorf("skipped without %s: %q", SkipEnv, r.skip)
	}
	if !strings.Contains(r.fatal, "absent.json") || !strings.Contains(r.fatal, SkipEnv+"=1") {
		t.Errorf("failure %q should name the missing path and %s=1", r.fatal, SkipEnv)
	}
}

func TestDirSkipsWhenMissingAndAllowed(t *testing.T) {
	tmp := tree(t)
	t.Chdir(filepath.Join(tmp, "repo"))
	t.Setenv(SkipEnv, "1")
	r := &recorder{TB: t}
	Dir(r, "gateways")
	if r.fatal != "" {
		t.Errorf("failed although %s=1: %q", SkipEnv, r.fatal)
	}
	if !strings.Contains(r.skip, SkipEnv) || !strings.Contains(r.skip, "gateways") {
		t.Errorf("skip message %q should name %s and the missing path", r.skip, SkipEnv)
	}
	// only 1 skips
	t.Setenv(SkipEnv, "true")
	r = &recorder{TB: t}
	Dir(r, "gateways")
	if r.fatal == "" || r.skip != "" {
		t.Errorf("%s=true: fatal %q skip %q, want a failure", SkipEnv, r.fatal, r.skip)
	}
}

func TestDirFailsOutsideAModule(t *testing.T) {
	tmp := t.TempDir()
	t.Chdir(tmp)
	t.Setenv(SkipEnv, "")
	r := &recorder{TB: t}
	Dir(r, "bookinfo")
	if !strings.Contains(r.fatal, "go.mod") {
		t.Errorf("failure %q should say no go.mod was found", r.fatal)
	}
}
