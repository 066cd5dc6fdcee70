package docs

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meshplane/istiod/cmd/istiod/app"
	"github.com/meshplane/istiod/pilot/pkg/bootstrap"
	"github.com/meshplane/istiod/pkg/log"
	"github.com/meshplane/istiod/pkg/monitoring"
	"github.com/meshplane/istiod/tests/istiobin"
)

// The directories whose code is istiod itself (the binary), as opposed to
// the tests and tools of tests/ and hack/.
var istiodDirs = []string{"cmd", "pilot", "pkg"}

// istiodPkgs are the packages of istiod, without the test-helper packages
// that live among them (xdstest, logtest: they serve nothing in istiod).
func istiodPkgs(t *testing.T) []*srcPkg {
	var out []*srcPkg
	for _, p := range loadSource(t).dirs(istiodDirs...) {
		if strings.HasSuffix(filepath.Base(p.dir), "test") {
			continue
		}
		out = append(out, p)
	}
	return out
}

// checkDynamic fails for reads the scan cannot resolve to names, unless
// they are known and explained in allowed (path:function → why), and for
// allowed entries that no longer exist.
func checkDynamic(t *testing.T, what string, dyn []dynamic, allowed map[string]string) {
	t.Helper()
	used := map[string]bool{}
	for _, d := range dyn {
		if _, ok := allowed[d.key]; ok {
			used[d.key] = true
			continue
		}
		t.Errorf("%s: %s whose name is not a constant (the docs test cannot list it): use a constant or a literal table, or explain it in the test's allow-list", d.where, what)
	}
	for _, k := range sortedKeys(allowed) {
		if !used[k] {
			t.Errorf("allow-list entry %s (%s) matches no %s any more: remove it", k, allowed[k], what)
		}
	}
}

// --- flags -----------------------------------------------------------------

// TestFlagsDoc: every flag of every istiod command is in
// docs/commands-and-flags.md, in the table under the command's heading,
// with its shorthand and its default; and every flag listed exists.
func TestFlagsDoc(t *testing.T) {
	const doc = "docs/commands-and-flags.md"
	rootCmd := app.NewRootCommand(io.Discard, io.Discard)
	byCmd := map[string][]mdTable{}
	for _, tb := range tablesWith(t, doc, "flag") {
		name := ""
		for _, span := range codeSpans(tb.heading) {
			if f := strings.Fields(span); len(f) >= 2 && f[0] == "istiod" {
				name = f[1]
			}
		}
		if name == "" {
			t.Errorf("%s: the flag table under %q does not sit under a heading naming `istiod <command>`", doc, tb.heading)
			continue
		}
		byCmd[name] = append(byCmd[name], tb)
	}
	cmds := map[string]*cobra.Command{}
	for _, c := range rootCmd.Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		cmds[c.Name()] = c
		if c.Flags().HasFlags() && len(byCmd[c.Name()]) == 0 {
			t.Errorf("%s: no flag table under a heading naming `istiod %s`", doc, c.Name())
		}
	}
	for name := range byCmd {
		if cmds[name] == nil {
			t.Errorf("%s: a flag table for `istiod %s`, a command istiod does not have", doc, name)
		}
	}
	for _, name := range sortedKeys(cmds) {
		c := cmds[name]
		code := map[string]string{}
		flags := map[string]*pflag.Flag{}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			code["--"+f.Name] = "istiod " + name
			flags["--"+f.Name] = f
		})
		var docNames []listed
		for _, l := range firstColumnNames(t, byCmd[name]) {
			if strings.HasPrefix(l.name, "--") {
				docNames = append(docNames, l)
				continue
			}
			// a shorthand: it must be the one of a flag of the same row
			ok := false
			for _, other := range codeSpans(l.row.cell(0)) {
				if f := flags[other]; f != nil && "-"+f.Shorthand == l.name {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s: %s is not the shorthand of a flag of its row", l.where, l.name)
			}
		}
		compareSets(t, "flag of istiod "+name, doc, code, docNames)
		for _, l := range docNames {
			f := flags[l.name]
			if f == nil {
				continue
			}
			if f.Shorthand != "" && !strings.Contains(l.row.cell(0), "`-"+f.Shorthand+"`") {
				t.Errorf("%s: %s has the shorthand -%s: list it in the first cell", l.where, l.name, f.Shorthand)
			}
			col := l.table.column("default")
			if col < 0 {
				t.Errorf("%s: the flag table has no default column", l.where)
				continue
			}
			want := f.DefValue
			if strings.HasSuffix(f.Value.Type(), "Slice") {
				want = strings.TrimSuffix(strings.TrimPrefix(want, "["), "]")
			}
			got := ""
			if spans := codeSpans(l.row.cell(col)); len(spans) > 0 {
				got = spans[0]
			}
			if got != want {
				t.Errorf("%s: %s defaults to %q in the code, the doc says %q (the first code span of the default cell; none for an empty default)", l.where, l.name, want, got)
			}
		}
	}
}

// --- environment -----------------------------------------------------------

// dynamicEnvReads are the environment reads whose name comes from
// elsewhere, each explained in docs/environment.md.
var dynamicEnvReads = map[string]string{
	"pkg/kube/inject/funcs.go:envOr": "the injection templates' env function: the template names the variable",
}

// TestEnvironmentDoc: every environment variable the Go code reads is in
// docs/environment.md — those istiod reads (cmd/, pilot/, pkg/) in the table
// under "Read by istiod", those the tests and tools read (tests/, hack/) in
// the table under "Read by the tests and tools" — and every variable listed
// is read.
func TestEnvironmentDoc(t *testing.T) {
	const doc = "docs/environment.md"
	src := loadSource(t)
	istiod, dyn1 := src.envReads(src.dirs(istiodDirs...))
	tools, dyn2 := src.envReads(src.dirs("tests", "hack"))
	checkDynamic(t, "environment read", append(dyn1, dyn2...), dynamicEnvReads)
	var istiodTables, toolTables []mdTable
	for _, tb := range tablesWith(t, doc, "variable") {
		switch h := strings.ToLower(tb.heading); {
		case strings.Contains(h, "tests"):
			toolTables = append(toolTables, tb)
		case strings.Contains(h, "istiod"):
			istiodTables = append(istiodTables, tb)
		default:
			t.Errorf("%s: variable table under %q: put it under \"Read by istiod\" or \"Read by the tests and tools\"", doc, tb.heading)
		}
	}
	compareSets(t, "environment variable read by istiod", doc, whereMap(istiod), firstColumnNames(t, istiodTables))
	compareSets(t, "environment variable read by the tests or tools", doc, whereMap(tools), firstColumnNames(t, toolTables))
}

// --- metrics ---------------------------------------------------------------

// dynamicMetricNames are metric definitions whose name is not a constant.
var dynamicMetricNames = map[string]string{}

// TestMetricsDoc: every metric istiod defines is in docs/metrics.md with its
// type and labels, every metric listed is defined, and every metric the
// running server registers was found by the scan (so a metric defined in a
// way the scan does not read still fails here once registered).
func TestMetricsDoc(t *testing.T) {
	const doc = "docs/metrics.md"
	src := loadSource(t)
	defs, dyn := src.metricDefs(istiodPkgs(t))
	checkDynamic(t, "metric definition", dyn, dynamicMetricNames)
	docNames := firstColumnNames(t, tablesWith(t, doc, "metric"))
	compareSets(t, "metric", doc, whereMap(defs), docNames)
	for _, l := range docNames {
		fs := defs[l.name]
		if len(fs) == 0 {
			continue
		}
		def := fs[0]
		if col := l.table.column("type"); col >= 0 && def.kind != "" {
			if got := strings.ToLower(strings.Fields(l.row.cell(col) + " ?")[0]); got != def.kind {
				t.Errorf("%s: %s is a %s (%s), the doc says %q", l.where, l.name, def.kind, def.where, l.row.cell(col))
			}
		}
		if col := l.table.column("labels"); col >= 0 && def.known {
			got := codeSpans(l.row.cell(col))
			want := append([]string(nil), def.labels...)
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s: %s has labels %v (%s), the doc lists %v", l.where, l.name, want, def.where, got)
			}
		}
	}
	// what the process actually registered and has samples for
	server(t)
	fams, err := monitoring.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range fams {
		n := mf.GetName()
		if strings.HasPrefix(n, "go_") || strings.HasPrefix(n, "process_") || strings.HasPrefix(n, "promhttp_") {
			continue // client_golang's own collectors, described in the doc's text
		}
		// histograms and summaries gather under their base name
		if _, ok := defs[n]; !ok {
			t.Errorf("metric %s is registered at run time but the scan of the sources did not find it: define it with a constant name in a prometheus.*Opts literal or prometheus.NewDesc", n)
		}
	}
}

// --- HTTP endpoints and ports ------------------------------------------------

// dynamicHandlerPaths are the mux registrations whose pattern is computed.
var dynamicHandlerPaths = map[string]string{
	"pilot/pkg/xds/debug/debug.go:Install": "/debug/<name> for every name the Debug's add helpers register (read from their calls and from /debug/list)",
}

// TestEndpointsDoc: every HTTP path istiod registers is in
// docs/endpoints.md and every path listed there is registered. The paths
// come from the sources (mux.Handle and HandleFunc with a constant pattern,
// and the names the debug package's add helpers are called with) and from
// /debug/list of a running server (the real wiring).
func TestEndpointsDoc(t *testing.T) {
	const doc = "docs/endpoints.md"
	src := loadSource(t)
	paths, dyn := src.handlerPaths(istiodPkgs(t))
	checkDynamic(t, "HTTP handler registration", dyn, dynamicHandlerPaths)
	for k, v := range src.debugAdds("pilot/pkg/xds/debug") {
		paths[k] = append(paths[k], v...)
	}
	srv := server(t)
	resp, err := http.Get("http://" + srv.HTTPAddr() + "/debug/list")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var listedPaths []string
	if err := json.NewDecoder(resp.Body).Decode(&listedPaths); err != nil {
		t.Fatalf("/debug/list: %v", err)
	}
	// Istio's shape: names below /debug/, query variants ("adsz?push=true")
	// listed apart
	for _, n := range listedPaths {
		p, _, _ := strings.Cut("/debug/"+n, "?")
		paths[p] = append(paths[p], found{name: p, where: "/debug/list of a running server"})
	}
	var docNames []listed
	for _, l := range firstColumnNames(t, tablesWith(t, doc, "path")) {
		l.name, _, _ = strings.Cut(l.name, "?") // `/debug/edsz?proxyID=<pod>.<namespace>`
		docNames = append(docNames, l)
	}
	compareSets(t, "HTTP path", doc, whereMap(paths), docNames)
}

// TestPortsDoc: the ports table of docs/endpoints.md gives each flag's
// default port.
func TestPortsDoc(t *testing.T) {
	const doc = "docs/endpoints.md"
	disc := discoveryCommand(t)
	for _, tb := range tablesWith(t, doc, "port") {
		col := tb.column("flag")
		if col < 0 {
			t.Fatalf("%s: the ports table has no flag column", doc)
		}
		for _, r := range tb.rows {
			port := codeSpans(r.cell(0))
			flag := codeSpans(r.cell(col))
			if len(port) != 1 || len(flag) != 1 {
				t.Errorf("%s: want one port and one flag in code spans", tb.where(r))
				continue
			}
			f := disc.Flags().Lookup(strings.TrimPrefix(flag[0], "--"))
			if f == nil {
				t.Errorf("%s: istiod discovery has no flag %s", tb.where(r), flag[0])
				continue
			}
			if f.DefValue != ":"+port[0] {
				t.Errorf("%s: %s defaults to %q, not port %s", tb.where(r), flag[0], f.DefValue, port[0])
			}
		}
	}
}

func discoveryCommand(t *testing.T) *cobra.Command {
	t.Helper()
	for _, c := range app.NewRootCommand(io.Discard, io.Discard).Commands() {
		if c.Name() == "discovery" {
			return c
		}
	}
	t.Fatal("istiod has no discovery command")
	return nil
}

var (
	srvOnce sync.Once
	srv     *bootstrap.Server
	srvErr  error
	srvDir  string
)

// server starts istiod once, on the bundled example, on loopback ports,
// without a cluster; TestMain stops it.
func server(t *testing.T) *bootstrap.Server {
	t.Helper()
	srvOnce.Do(func() {
		srvDir, srvErr = os.MkdirTemp("", "docs-test")
		if srvErr != nil {
			return
		}
		args := bootstrap.DefaultArgs()
		args.ConfigDir = filepath.Join(root, "manifests/examples/bookinfo")
		args.MeshConfigFile = filepath.Join(root, "manifests/examples/mesh.yaml")
		args.NetworksConfigFile = filepath.Join(srvDir, "no-networks-file")
		args.HTTPAddr, args.MonitoringAddr, args.GRPCAddr, args.SecureGRPCAddr, args.HTTPSAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
		args.ShutdownDuration = 5 * time.Second
		args.Security.CADir = filepath.Join(srvDir, "ca")
		if srv, srvErr = bootstrap.NewServer(args); srvErr != nil {
			return
		}
		srvErr = srv.Start()
	})
	if srvErr != nil {
		t.Fatalf("starting istiod: %v", srvErr)
	}
	return srv
}

func TestMain(m *testing.M) {
	// the server started for the endpoint and metric checks logs nothing
	if err := log.Configure(log.Options{OutputLevels: "default:none", Out: io.Discard}); err != nil {
		panic(err)
	}
	code := m.Run()
	if srv != nil {
		srv.Shutdown()
	}
	if srvDir != "" {
		_ = os.RemoveAll(srvDir)
	}
	os.Exit(code)
}

// --- packages, make targets ---------------------------------------------------

// TestPackagesDoc: docs/packages.md lists every package of `go list ./...`
// once, and nothing else.
func TestPackagesDoc(t *testing.T) {
	const doc = "docs/packages.md"
	cmd := exec.Command(goTool(), "list", "-e", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	code := map[string]string{}
	for _, p := range strings.Fields(string(out)) {
		code[strings.TrimPrefix(p, module+"/")] = "go list ./..."
	}
	compareSets(t, "package", doc, code, firstColumnNames(t, tablesWith(t, doc, "package")))
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

var (
	phonyRE   = regexp.MustCompile(`(?m)^\.PHONY:(.*)$`)
	makeVarRE = regexp.MustCompile(`(?m)^([A-Z_]+)\s*\?=`)
)

// TestMakeTargetsDoc: docs/testing.md lists every target of the Makefile's
// .PHONY and every variable it lets the caller override (VAR ?= ...).
func TestMakeTargetsDoc(t *testing.T) {
	const doc = "docs/testing.md"
	mk := readDoc(t, "Makefile")
	targets := map[string]string{}
	for _, m := range phonyRE.FindAllStringSubmatch(mk, -1) {
		for _, n := range strings.Fields(m[1]) {
			targets["make "+n] = "Makefile .PHONY"
		}
	}
	compareSets(t, "make target", doc, targets, firstColumnNames(t, tablesWith(t, doc, "target")))
	vars := map[string]string{}
	for _, m := range makeVarRE.FindAllStringSubmatch(mk, -1) {
		vars[m[1]] = "Makefile"
	}
	compareSets(t, "make variable", doc, vars, firstColumnNames(t, tablesWith(t, doc, "make variable")))
}

// --- README, links and paths ---------------------------------------------------

// TestReadmeQuickStart: README.md starts with the quick start of two
// commands and names the Go version go.mod requires.
func TestReadmeQuickStart(t *testing.T) {
	readme := readDoc(t, "README.md")
	want := "```sh\n" +
		"go run ./cmd/istiod discovery --configDir manifests/examples/bookinfo --meshConfig manifests/examples/mesh.yaml\n" +
		"make test\n" +
		"```\n"
	i := strings.Index(readme, want)
	if i < 0 {
		t.Fatalf("README.md: the quick start block is not\n%s", want)
	}
	if first := strings.Index(readme, "```"); first != i {
		t.Errorf("README.md: the quick start block must be the first code block")
	}
	if q := strings.Index(readme, "## Quick start"); q < 0 || q > i || strings.Count(readme[:q], "\n## ") > 0 {
		t.Errorf("README.md: the first section must be \"## Quick start\", holding the two commands")
	}
	goMod := readDoc(t, "go.mod")
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(goMod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	if !strings.Contains(readme, "Go "+m[1]+" or later") {
		t.Errorf("README.md: go.mod needs go %s: the quick start must say \"Go %s or later\"", m[1], m[1])
	}
}

var slugDropRE = regexp.MustCompile(`[^\p{L}\p{N} _-]`)

// anchors returns the anchors of a markdown file's headings, as GitHub
// makes them: lower case, punctuation dropped, spaces as hyphens.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fenced := false
	for _, l := range strings.Split(readDoc(t, path), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		out[strings.ReplaceAll(slugDropRE.ReplaceAllString(h, ""), " ", "-")] = true
	}
	return out
}

var (
	linkRE     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	repoPathRE = regexp.MustCompile(`^(cmd|pilot|pkg|tests|hack|manifests|docs)/[A-Za-z0-9_.\-/]*$`)
)

// TestLinksAndPaths: every relative link of README.md and docs/*.md points
// at a file that exists, and so does every repository path written in a
// code span (`pilot/pkg/xds`, `manifests/istiod/`), so a moved package or
// file fails here.
func TestLinksAndPaths(t *testing.T) {
	files := []string{"README.md"}
	entries, err := os.ReadDir(filepath.Join(root, "docs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") {
			files = append(files, "docs/"+e.Name())
		}
	}
	for _, f := range files {
		text := readDoc(t, f)
		for i, line := range strings.Split(text, "\n") {
			where := f + ":" + itoa(i+1)
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				target, frag, _ := strings.Cut(target, "#")
				rel := filepath.ToSlash(filepath.Join(filepath.Dir(f), target))
				if !exists(rel) {
					t.Errorf("%s: link to %s, which does not exist", where, m[1])
					continue
				}
				if frag != "" && strings.HasSuffix(rel, ".md") && !anchors(t, rel)[frag] {
					t.Errorf("%s: link to %s: %s has no heading with the anchor #%s", where, m[1], rel, frag)
				}
			}
			for _, span := range codeSpans(line) {
				if repoPathRE.MatchString(span) && !exists(span) {
					t.Errorf("%s: `%s` does not exist in the repository", where, span)
				}
			}
		}
	}
}

// --- origins ---------------------------------------------------------------

var goStringRE = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`)

// istioLiterals returns every string literal of the non-test Go files of
// Istio's source at the commit tests/istiobin pins, from the module cache
// (hack/istiobin.sh downloads it); the test skips when it is not there.
func istioLiterals(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command(goTool(), "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "istio.io", "istio@"+istiobin.Version)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("Istio's source is not in the module cache (%v): run make testbin", err)
	}
	lits := map[string]bool{}
	for _, sub := range []string{"pilot", "pkg", "security"} {
		err := filepath.WalkDir(filepath.Join(dir, sub), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range goStringRE.FindAllString(string(b), -1) {
				lits[m[1:len(m)-1]] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return lits
}

// TestOriginsMatchIstioSource: in the tables of docs/metrics.md and
// docs/endpoints.md, a row whose origin is "Istio" names something Istio
// 1.31's source declares (a string literal of that name), and a row whose
// origin is "ours" names something it does not.
func TestOriginsMatchIstioSource(t *testing.T) {
	lits := istioLiterals(t)
	for _, c := range []struct{ doc, key string }{{"docs/metrics.md", "metric"}, {"docs/endpoints.md", "path"}} {
		for _, l := range firstColumnNames(t, tablesWith(t, c.doc, c.key)) {
			col := l.table.column("origin")
			if col < 0 {
				t.Errorf("%s: the table has no origin column", l.where)
				continue
			}
			name, _, _ := strings.Cut(l.name, "?")
			switch origin := strings.ToLower(strings.Fields(l.row.cell(col) + " ?")[0]); origin {
			case "istio":
				if !lits[name] {
					t.Errorf("%s: %s is marked Istio's, but Istio's source at %s has no such name: mark it ours", l.where, name, istiobin.Version)
				}
			case "ours":
				if lits[name] {
					t.Errorf("%s: %s is marked ours, but Istio's source at %s has that name: mark it Istio", l.where, name, istiobin.Version)
				}
			default:
				t.Errorf("%s: origin %q: want Istio or ours", l.where, l.row.cell(col))
			}
		}
	}
}
