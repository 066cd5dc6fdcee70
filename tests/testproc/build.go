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
	addrs, err := FreeAddrs(1)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}

// FreeAddrs returns n distinct free loopback addresses: each port is held
// until all are picked, so that the kernel cannot hand out one twice (a
// process given the same port for two listeners fails to start).
func FreeAddrs(n int) ([]string, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	out := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}
