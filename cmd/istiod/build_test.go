package main

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const versionFlag = "-X github.com/meshplane/istiod/pkg/version.Version="

// `make build` stamps VERSION into the binary with -ldflags -X and strips
// it: `istiod version` prints the stamp, and the binary has no symbol table.
func TestMakeBuildStampsVersionAndStrips(t *testing.T) {
	if testing.Short() {
		t.Skip("builds istiod")
	}
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make")
	}
	out := t.TempDir()
	build := exec.Command(makeBin, "-C", "../..", "build", "OUT="+out, "VERSION=v9.8.7-stamp", "GO="+goTool(t))
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, b)
	}
	bin := filepath.Join(out, "istiod")
	got, err := exec.Command(bin, "version").Output()
	if err != nil || string(got) != "v9.8.7-stamp\n" {
		t.Fatalf("istiod version: %q, %v", got, err)
	}
	if runtime.GOOS != "linux" {
		return
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, s := range []string{".symtab", ".debug_info"} {
		if f.Section(s) != nil {
			t.Errorf("binary not stripped: has %s", s)
		}
	}
}

// Without VERSION, make stamps `git describe --tags --always --dirty`.
func TestMakeBuildVersionDefaultsToGitDescribe(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make")
	}
	want, err := exec.Command("git", "-C", "../..", "describe", "--tags", "--always", "--dirty").Output()
	if err != nil {
		t.Skip("not a git checkout")
	}
	cmd := exec.Command(makeBin, "-C", "../..", "-n", "build")
	cmd.Env = withoutMakeVars(os.Environ())
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n build: %v", err)
	}
	if flag := versionFlag + strings.TrimSpace(string(want)); !bytes.Contains(b, []byte(flag)) || !bytes.Contains(b, []byte("-s -w")) {
		t.Errorf("make -n build:\n%s\nlacks %q or -s -w", b, flag)
	}
}

// The image builds without .git (.dockerignore): it takes VERSION as a
// build argument, given by make image, and links with the same flags.
func TestDockerfileStampsVersion(t *testing.T) {
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var goBuild string
	for _, l := range strings.Split(string(df), "\n") {
		if strings.HasPrefix(l, "RUN ") && strings.Contains(l, "go build") {
			goBuild = l
		}
	}
	for _, want := range []string{"-s -w", versionFlag + "${VERSION}", "-trimpath"} {
		if !strings.Contains(goBuild, want) {
			t.Errorf("Dockerfile's go build %q lacks %q", goBuild, want)
		}
	}
	if !strings.Contains(string(df), "\nARG VERSION") {
		t.Error("Dockerfile has no VERSION build argument")
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "--build-arg VERSION=$(VERSION)") {
		t.Error("make image does not pass VERSION to docker build")
	}
}

// goTool is the go command running this test, so make builds with the same
// toolchain.
func goTool(t *testing.T) string {
	t.Helper()
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no go tool at %s", p)
	}
	return p
}

// withoutMakeVars drops VERSION, LDFLAGS and MAKEFLAGS from env, so the
// Makefile's defaults apply.
func withoutMakeVars(env []string) []string {
	out := env[:0]
	for _, e := range env {
		if strings.HasPrefix(e, "VERSION=") || strings.HasPrefix(e, "LDFLAGS=") || strings.HasPrefix(e, "MAKEFLAGS=") {
			continue
		}
		out = append(out, e)
	}
	return out
}
