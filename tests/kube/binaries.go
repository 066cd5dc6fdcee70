package kube

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

const modulePath = "github.com/meshplane/istiod"

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// binaries returns the directory holding kube-apiserver and etcd, running
// hack/testbin.sh (once per process) to build them when they are missing.
func binaries() (string, error) {
	binOnce.Do(func() { binDir, binErr = buildBinaries() })
	return binDir, binErr
}

func buildBinaries() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	// Test packages run in parallel processes; serialise the (idempotent but
	// minutes-long) build so two packages never build into the same cache.
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "istiod-testbin.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck

	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "hack", "testbin.sh"))
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hack/testbin.sh could not build kube-apiserver and etcd (%v); run `make testbin` to see why:\n%s",
			err, tail(stderr.String(), 4000))
	}
	dir := strings.TrimSpace(lastLine(stdout.String()))
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if fi, err := os.Stat(filepath.Join(dir, bin)); err != nil || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("hack/testbin.sh printed %q, which holds no executable %s", dir, bin)
		}
	}
	return dir, nil
}

// RepoRoot returns the root of the istiod module: the nearest directory at or
// above the working directory whose go.mod declares it.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(data, []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of " + modulePath + " at or above the working directory")
		}
		dir = parent
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
