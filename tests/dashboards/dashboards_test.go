package dashboards

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	dto "github.com/prometheus/client_model/go"

	"github.com/meshplane/istiod/tests/kube"
)

func TestMain(m *testing.M) { kube.Main(m) }

// otherExporters are the metrics Istio's dashboard reads that istiod does
// not export, with who does. Every other metric it reads must be on
// istiod's /metrics.
var otherExporters = map[string]string{
	"container_cpu_usage_seconds_total":  "the kubelet's cAdvisor, per container (the dashboard selects istiod's discovery container)",
	"container_memory_working_set_bytes": "the kubelet's cAdvisor, per container",
	"envoy_cluster_upstream_cx_active":   "the proxies' Envoy (its xds-grpc cluster is the proxy's connection to istiod)",
}

// targetLabels are the labels Prometheus's Kubernetes service discovery
// puts on every series it scrapes from a pod (Istio's sample Prometheus
// relabels pod labels such as app, and the pod, container and namespace),
// never the exporter: the dashboard's matchers and groupings on them are
// not checked against /metrics.
var targetLabels = map[string]bool{"app": true, "pod": true, "container": true, "namespace": true, "instance": true, "job": true}

// alertMetrics are the metrics the istiod alerts issue 28 §7 names read
// (IstioComponentDown on istio_build, rejection and internal-error alerts):
// Istio's module ships no alert rules to take them from.
var alertMetrics = []string{
	"istio_build", "pilot_total_xds_internal_errors", "pilot_total_xds_rejects", "pilot_xds_write_timeout",
	"pilot_xds_cds_reject", "pilot_xds_eds_reject", "pilot_xds_lds_reject", "pilot_xds_rds_reject",
}

// Every metric Istio 1.31's control-plane dashboard reads is exported by a
// real istiod (against a real API server) once the paths that record it
// ran, with the labels the dashboard selects and groups by, and with the
// type Istio declares it with; so is every metric of alertMetrics. The
// metrics other components export are listed in otherExporters.
func TestPilotDashboardMetrics(t *testing.T) {
	exprs := dashboardExprs(t)
	istio := istioTypes(t)
	var sels []Selector
	for _, e := range exprs {
		sels = append(sels, Selectors(e)...)
	}
	for _, m := range alertMetrics {
		sels = append(sels, Selector{Metric: m})
	}
	used := map[string]bool{}
	for _, sel := range sels {
		used[sel.Metric] = true
	}
	for n, who := range otherExporters {
		if !used[n] {
			t.Errorf("otherExporters lists %s, which the dashboard no longer reads", n)
		}
		t.Logf("%s: not istiod's; exported by %s", n, who)
	}

	env := kube.Shared(t)
	ns := env.NewNamespace(t, nil).Name
	d := startIstiod(t, env, ns)
	exerciseRecordingPaths(t, env, d, ns)
	// the events are counted asynchronously: poll until nothing is missing
	eventually(t, "every metric the dashboard reads on /metrics", func() (bool, string) {
		code, body := d.fetch(d.srv.MonitoringAddr(), "/metrics")
		if code != http.StatusOK {
			return false, fmt.Sprintf("/metrics: %d %s", code, body)
		}
		problems := checkSelectors(newExposition(t, body), sels, istio)
		return len(problems) == 0, "\n  " + strings.Join(problems, "\n  ")
	})
}

// checkSelectors returns what /metrics lacks for sels: a metric, a series
// with a matcher's label value, a grouping label, or Istio's type.
func checkSelectors(got exposition, sels []Selector, istio map[string]string) []string {
	var problems []string
	for _, sel := range sels {
		if _, ok := otherExporters[sel.Metric]; ok {
			continue
		}
		series, fam := got.series(sel.Metric)
		if fam == nil {
			problems = append(problems, "istiod does not export "+sel.Metric)
			continue
		}
		typ := strings.ToLower(fam.GetType().String())
		if want := istio[fam.GetName()]; want != "" && typ != want {
			problems = append(problems, fmt.Sprintf("%s is a %s, Istio declares a %s", fam.GetName(), typ, want))
		}
		for _, m := range sel.Matchers {
			if !targetLabels[m.Label] && !anyMatches(series, m) {
				problems = append(problems, fmt.Sprintf("no series of %s has %s%s%q (series: %v)", sel.Metric, m.Label, m.Op, m.Value, series))
			}
		}
		for _, l := range sel.GroupBy {
			if !targetLabels[l] && !anyHas(series, l) {
				problems = append(problems, fmt.Sprintf("the dashboard groups %s by %s, which no series of it has (series: %v)", sel.Metric, l, series))
			}
		}
	}
	return problems
}

// exposition is a parsed /metrics page.
type exposition struct {
	fams map[string]*dto.MetricFamily
}

func newExposition(t *testing.T, body string) exposition {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return exposition{fams: fams}
}

// series returns the label sets of the samples named name (a histogram's
// name_bucket samples carry le), and the family they belong to.
func (e exposition) series(name string) ([]map[string]string, *dto.MetricFamily) {
	base, suffix := name, ""
	if _, ok := e.fams[name]; !ok {
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, s); ok {
				base, suffix = b, s
			}
		}
	}
	fam := e.fams[base]
	if fam == nil || (suffix != "" && fam.GetType() != dto.MetricType_HISTOGRAM && fam.GetType() != dto.MetricType_SUMMARY) {
		return nil, nil
	}
	var out []map[string]string
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if suffix != "_bucket" {
			out = append(out, labels)
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			withLE := map[string]string{"le": fmt.Sprint(b.GetUpperBound())}
			for k, v := range labels {
				withLE[k] = v
			}
			out = append(out, withLE)
		}
	}
	if len(out) == 0 {
		return nil, nil // declared, no series: not exported yet
	}
	return out, fam
}

func anyMatches(series []map[string]string, m Matcher) bool {
	re, err := regexp.Compile("^(?:" + m.Value + ")$")
	for _, s := range series {
		v := s[m.Label]
		switch m.Op {
		case "=":
			if v == m.Value {
				return true
			}
		case "!=":
			if v != m.Value {
				return true
			}
		case "=~":
			if err == nil && re.MatchString(v) {
				return true
			}
		case "!~":
			if err == nil && !re.MatchString(v) {
				return true
			}
		}
	}
	return false
}

func anyHas(series []map[string]string, label string) bool {
	for _, s := range series {
		if _, ok := s[label]; ok {
			return true
		}
	}
	return false
}
