package dashboards

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/meshplane/istiod/tests/helmbin"
)

// What Istio's module says its control-plane monitoring reads, and how its
// source declares each metric.

const (
	dashboardJSON      = "manifests/addons/dashboards/pilot-dashboard.gen.json"
	dashboardLibsonnet = "manifests/addons/dashboards/pilot.libsonnet"
	queriesLibsonnet   = "manifests/addons/dashboards/lib/queries.libsonnet"
)

// moduleDir is the istio.io/istio module tests/istiobin pins, in the Go
// module cache.
func moduleDir(t *testing.T) string {
	t.Helper()
	return helmbin.IstioSource(t)
}

func readModule(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(moduleDir(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dashboardExprs returns every PromQL expression of the generated
// dashboard (the "expr" of every target of every panel).
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(readModule(t, dashboardJSON)), &doc); err != nil {
		t.Fatalf("%s: %v", dashboardJSON, err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && k == "expr" {
					out = append(out, s)
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatalf("%s has no expressions", dashboardJSON)
	}
	return out
}

// libsonnetExprs returns the PromQL fragments of the queries the dashboard
// source uses.
func libsonnetExprs(t *testing.T) []string {
	t.Helper()
	frags, missing := LibsonnetQueries(readModule(t, dashboardLibsonnet), readModule(t, queriesLibsonnet))
	if len(missing) > 0 {
		t.Fatalf("%s uses queries %v that %s does not define (or the test no longer reads it right)",
			dashboardLibsonnet, missing, queriesLibsonnet)
	}
	var out []string
	for _, f := range frags {
		out = append(out, f...)
	}
	return out
}

var (
	alertRuleRE  = regexp.MustCompile(`(?m)^\s*-?\s*alert:\s*\S`)
	alertFileExt = map[string]bool{".yaml": true, ".yml": true, ".json": true, ".libsonnet": true, ".jsonnet": true}
)

// alertRuleFiles lists the files of the module that define Prometheus
// alert rules (or the IstioComponentDown alert by name).
func alertRuleFiles(t *testing.T) []string {
	t.Helper()
	root := moduleDir(t)
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !alertFileExt[filepath.Ext(path)] {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		s := string(b)
		if strings.Contains(s, "IstioComponentDown") || strings.Contains(s, "kind: PrometheusRule") || alertRuleRE.MatchString(s) {
			rel, _ := filepath.Rel(root, path)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// istioDeclRE is a metric declaration of Istio's pkg/monitoring.
var istioDeclRE = regexp.MustCompile(`monitoring\.New(Sum|Gauge|Distribution|DerivedGauge)\(\s*"([A-Za-z0-9_:]+)"`)

// istioTypes returns the Prometheus type of every metric Istio's non-test
// Go sources declare with its pkg/monitoring: a Sum is a counter (exposed
// without a _total suffix: Istio's exporter adds none), a Gauge or
// DerivedGauge a gauge, a Distribution a histogram.
func istioTypes(t *testing.T) map[string]string {
	t.Helper()
	kinds := map[string]string{"Sum": "counter", "Gauge": "gauge", "DerivedGauge": "gauge", "Distribution": "histogram"}
	out := map[string]string{}
	root := moduleDir(t)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "vendor" || n == "testdata" || n == "tests" || n == "samples" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range istioDeclRE.FindAllStringSubmatch(string(b), -1) {
			out[m[2]] = kinds[m[1]]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if out["pilot_xds_pushes"] != "counter" {
		t.Fatalf("the scan of Istio's sources found no pilot_xds_pushes counter: it no longer reads them right")
	}
	return out
}

// The generated dashboard and its jsonnet source read the same metrics,
// and the module ships no alert rules (a module that does would need its
// expressions checked as the dashboard's are).
func TestIstioReferenceSources(t *testing.T) {
	gen, src := MetricNames(dashboardExprs(t)), MetricNames(libsonnetExprs(t))
	t.Logf("%s reads %v", dashboardJSON, gen)
	if strings.Join(gen, " ") != strings.Join(src, " ") {
		t.Errorf("the metrics of %s and of %s differ:\n  gen.json:  %v\n  libsonnet: %v",
			dashboardJSON, dashboardLibsonnet, gen, src)
	}
	// the type check of TestPilotDashboardMetrics covers every metric of
	// istiod's the dashboard and the alerts read (go_* are client_golang's
	// runtime collector, in Istio as here)
	types := istioTypes(t)
	for _, n := range append(gen, alertMetrics...) {
		base := strings.TrimSuffix(n, "_bucket")
		if _, other := otherExporters[n]; !other && !strings.HasPrefix(n, "go_") && types[base] == "" {
			t.Errorf("Istio's sources declare no metric %s with pkg/monitoring", base)
		}
	}
	if files := alertRuleFiles(t); len(files) > 0 {
		t.Errorf("Istio's module now ships alert rules (%v): check the metrics their expressions read too", files)
	}
}
