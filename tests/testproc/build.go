package testproc

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BuildIstiod compiles cmd/istiod of the module the caller runs in (found
// by `go env GOMOD`, so tests and tools outside the repository root find
// it) into dir, and returns the binary's path.
func BuildIstiod(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the istiod module (run from the repository)")
	}
	bin := filepath.Join(dir, "istiod")
	build := exec.Command("go", "build", "-o", bin, "./cmd/istiod")
	build.Dir = filepath.Dir(gomod)
	var log bytes.Buffer
	build.Stdout, build.Stderr = &log, &log
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/istiod: %v\n%s", err, log.String())
	}
	return bin, nil
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
