package arch

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/meshplane/istiod"

// deps returns, for every package matching pattern, its transitive
// imports. With tests, its test packages count too: a test package
// "p [p.test]" or "p_test [p.test]" counts as p, and its imports as p's;
// without, only what the package's non-test files import (what a binary
// built from it would link).
func deps(t *testing.T, pattern string, tests bool) map[string][]string {
	t.Helper()
	args := []string{"list", "-e"}
	if tests {
		args = append(args, "-test")
	}
	args = append(args, "-f", `{{.ImportPath}}|{{join .Deps "|"}}`, pattern)
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	res := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		pkg := normalize(f[0])
		if strings.HasSuffix(pkg, ".test") {
			continue // the generated test main
		}
		for _, d := range f[1:] {
			if d != "" {
				res[pkg] = append(res[pkg], normalize(d))
			}
		}
		if _, ok := res[pkg]; !ok {
			res[pkg] = nil
		}
	}
	return res
}

// normalize maps "p [q.test]" and "p_test" to p.
func normalize(p string) string {
	if i := strings.Index(p, " ["); i >= 0 {
		p = p[:i]
	}
	return strings.TrimSuffix(p, "_test")
}

// rule forbids packages under from (the package itself and below, unless
// exact) from importing, directly or not, packages under any of forbidden;
// their test files too, unless nonTest.
type rule struct {
	from      string
	exact     bool
	nonTest   bool
	forbidden []string
	why       string
}

func under(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

func check(t *testing.T, rules []rule) {
	t.Helper()
	var withTests, nonTest map[string][]string
	for _, r := range rules {
		var all map[string][]string
		if r.nonTest {
			if nonTest == nil {
				nonTest = deps(t, "./...", false)
			}
			all = nonTest
		} else {
			if withTests == nil {
				withTests = deps(t, "./...", true)
			}
			all = withTests
		}
		from := module
		if r.from != "" {
			from += "/" + r.from
		}
		for pkg, ds := range all {
			if (r.exact && pkg != from) || (!r.exact && !under(pkg, from)) {
				continue
			}
			for _, d := range ds {
				for _, f := range r.forbidden {
					if !strings.Contains(f, ".") {
						f = module + "/" + f
					}
					own := d == from || (!r.exact && under(d, from))
					if under(d, f) && !own {
						t.Errorf("%s imports %s: %s", pkg, d, r.why)
					}
				}
			}
		}
	}
}

func TestPkgNeverImportsPilot(t *testing.T) {
	check(t, []rule{{from: "pkg", forbidden: []string{"pilot", "cmd"}, why: "pkg/ must not depend on pilot/ or cmd/"}})
}

// tests/ is the top of the tree: the harnesses and the test helpers
// (reference data, golden files, tests/refmesh, tests/injecttest), which
// may build on anything. No package a binary links imports them; test
// files under pkg/, pilot/ and cmd/ may.
func TestProductionNeverImportsTests(t *testing.T) {
	check(t, []rule{
		{from: "pkg", nonTest: true, forbidden: []string{"tests"}, why: "pkg/ must not depend on the test tree; test helpers live under tests/"},
		{from: "pilot", nonTest: true, forbidden: []string{"tests"}, why: "pilot/ must not depend on the test tree; test helpers live under tests/"},
		{from: "cmd", nonTest: true, forbidden: []string{"tests"}, why: "cmd/ must not depend on the test tree"},
	})
}

// The security translations (authn, authz) are beside networking in layer
// 10, and networking builds on them (mTLS chains, RBAC and JWT filters);
// the other direction would be a cycle waiting to happen.
func TestSecurityBelowNetworking(t *testing.T) {
	check(t, []rule{{from: "pilot/pkg/security", forbidden: []string{"pilot/pkg/networking"},
		why: "networking imports pilot/pkg/security, never the reverse; shared utilities belong under pkg/"}})
}

func TestNoIstioImplementationImports(t *testing.T) {
	check(t, []rule{{from: "", forbidden: []string{"istio.io/istio"}, why: "this project never imports istio.io/istio"}})
}

// The xDS packages by role (pilot/pkg/xds/doc.go): the wire layer knows the
// model only, the push engine knows no gRPC and no connections, the
// generators and debug views reach the server through its exported
// interfaces, and only bootstrap wires them together.
func TestXDSLayers(t *testing.T) {
	const x = "pilot/pkg/xds"
	check(t, []rule{
		{from: x, exact: true, forbidden: []string{x + "/pushengine", x + "/generators", x + "/debug", "pilot/pkg/networking",
			"pilot/pkg/serviceregistry", "pilot/pkg/config", "pilot/pkg/bootstrap", "tests/refmesh"},
			why: "the xDS wire layer depends on the model only"},
		{from: x + "/xdstest", exact: true, forbidden: []string{x + "/pushengine", x + "/generators", x + "/debug", "pilot/pkg/networking", "pilot/pkg/serviceregistry"},
			why: "the wire test helpers are for every xDS package, the wire layer included"},
		{from: x + "/adsc", forbidden: []string{x + "/pushengine", x + "/generators", x + "/debug", "pilot/pkg/networking"},
			why: "the test client knows the protocol only"},
		{from: x + "/pushengine", forbidden: []string{"google.golang.org/grpc", x + "/generators", x + "/debug", x + "/adsc", "pilot/pkg/networking", "pilot/pkg/bootstrap"},
			why: "the push engine decides pushes; it knows no gRPC and no connections"},
		{from: x + "/generators", forbidden: []string{x + "/pushengine", x + "/debug", "pilot/pkg/bootstrap"},
			why: "generators register through xds.Generator and know nothing of the push engine or debug views"},
		{from: x + "/debug", forbidden: []string{x + "/pushengine", x + "/generators", "pilot/pkg/bootstrap"},
			why: "debug views read exported snapshots, not the engine's or generators' internals"},
		{from: "pilot/pkg/networking", forbidden: []string{x, "pilot/pkg/bootstrap"},
			why: "networking translates the model into Envoy protos; it knows nothing of xDS serving"},
		{from: "pilot/pkg/model", forbidden: []string{x, "pilot/pkg/networking", "pilot/pkg/bootstrap"},
			why: "the model is below networking and xds"},
	})
}
