package refdata

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// SkipEnv is the environment variable that, set to 1, makes missing reference
// data skip the test instead of failing it.
const SkipEnv = "ISTIOD_SKIP_REFERENCE"

// Dir returns the path of rel (a file or directory, slash-separated) under
// <repository root>/../shared/reference. The repository root is the nearest
// directory holding go.mod at or above the working directory, which go test
// sets to the package directory. When the path does not exist the test fails,
// or is skipped when SkipEnv is 1.
func Dir(t testing.TB, rel string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("reference data %s: %v", rel, err)
		return ""
	}
	p, err := find(wd, rel)
	if err != nil {
		if os.Getenv(SkipEnv) == "1" {
			t.Skipf("reference data not available (%s=1): %v", SkipEnv, err)
			return ""
		}
		t.Fatalf("reference data not available: %v (set %s=1 to skip tests that need it)", err, SkipEnv)
		return ""
	}
	return p
}

// find resolves rel against the reference directory of the repository
// holding start.
func find(start, rel string) (string, error) {
	root, err := moduleRoot(start)
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(root), "shared", "reference", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
}

// moduleRoot is the nearest directory at or above dir holding go.mod.
func moduleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod at or above %s", dir)
		}
		d = parent
	}
}
