package testproc

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
// process given the same port for two listeners fails to start), and none
// was returned by an earlier call of the process (handedOut).
func FreeAddrs(n int) ([]string, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	handedOut.Lock()
	defer handedOut.Unlock()
	out := make([]string, 0, n)
	for tries := 0; len(out) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("no loopback port not handed out before in %d tries", tries)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l) // held (even when not used) until all are picked
		a := l.Addr().String()
		if handedOut.addrs[a] {
			continue
		}
		handedOut.addrs[a] = true
		out = append(out, a)
	}
	return out, nil
}

// handedOut are the addresses FreeAddrs returned in this process: a port
// is handed out once, so that a process started with one cannot lose it
// to another started just after, which was given the same port before the
// first bound it (the ports are free again once FreeAddrs returns).
var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}
