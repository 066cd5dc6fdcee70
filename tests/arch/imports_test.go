package arch

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/meshplane/istiod"

// deps returns, for every package matching pattern, its transitive imports.
func deps(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-deps=false", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, pattern)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	res := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			res[f[0]] = f[1:]
		}
	}
	return res
}

func TestPkgNeverImportsPilot(t *testing.T) {
	for pkg, ds := range deps(t, "./pkg/...") {
		for _, d := range ds {
			if strings.HasPrefix(d, module+"/pilot/") || strings.HasPrefix(d, module+"/cmd/") {
				t.Errorf("%s imports %s: pkg/ must not depend on pilot/ or cmd/", pkg, d)
			}
		}
	}
}

func TestNoIstioImplementationImports(t *testing.T) {
	for pkg, ds := range deps(t, "./...") {
		for _, d := range ds {
			if d == "istio.io/istio" || strings.HasPrefix(d, "istio.io/istio/") {
				t.Errorf("%s imports %s: this project never imports istio.io/istio", pkg, d)
			}
		}
	}
}
