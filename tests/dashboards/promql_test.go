package dashboards

import (
	"reflect"
	"testing"
)

func TestSelectors(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []Selector
	}{
		{`sum by (tag) (istio_build{component="pilot"})`,
			[]Selector{{Metric: "istio_build", Matchers: []Matcher{{"component", "=", "pilot"}}, GroupBy: []string{"tag"}}}},
		{`sum by (pod) (irate(container_cpu_usage_seconds_total{container="discovery",pod=~"istiod-.*"}[$__rate_interval]))`,
			[]Selector{{Metric: "container_cpu_usage_seconds_total",
				Matchers: []Matcher{{"container", "=", "discovery"}, {"pod", "=~", "istiod-.*"}}, GroupBy: []string{"pod"}}}},
		{`sum(rate(pilot_xds_push_time_bucket{}[$__rate_interval])) by (le)`,
			[]Selector{{Metric: "pilot_xds_push_time_bucket", GroupBy: []string{"le"}}}},
		{`sum by (type,event) (rate(pilot_k8s_reg_events[5m]))`,
			[]Selector{{Metric: "pilot_k8s_reg_events", GroupBy: []string{"type", "event"}}}},
		{`pilot_total_xds_internal_errors`, []Selector{{Metric: "pilot_total_xds_internal_errors"}}},
		// two metrics: grouping is not attributed
		{`sum(a_total{x!="y"}) / sum without (le) (b:rate5m) or vector(0) > bool 0.5e3`,
			[]Selector{{Metric: "a_total", Matchers: []Matcher{{"x", "!=", "y"}}}, {Metric: "b:rate5m"}}},
		{`histogram_quantile(0.99, sum(rate(m_bucket{l=~"a\"b"}[1m])) by (le)) offset 5m`,
			[]Selector{{Metric: "m_bucket", Matchers: []Matcher{{"l", "=~", `a\"b`}}, GroupBy: []string{"le"}}}},
		{`label_join(up, "dst", ".", "a", "b")`, []Selector{{Metric: "up"}}},
	} {
		if got := Selectors(tc.expr); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Selectors(%s)\n got %+v\nwant %+v", tc.expr, got, tc.want)
		}
	}
}

func TestLibsonnetQueries(t *testing.T) {
	lib := `{
  queries(names):
    local appLabels = { app: names.app };
    {
      query(legend, query):
        self.rawQuery(query),

      one:
        self.query(
          'Version ({{tag}})',
          sum(labels('istio_build', { component: names.component }), by=['tag'])
        ),

      many: [
        self.query('Internal Errors', 'pilot_total_xds_internal_errors'),
        self.query(
          '{{le}}',
          |||
            sum(rate(pilot_xds_push_time_bucket{}[$__rate_interval])) by (le)
          |||
        ) + q.withFormat('heatmap'),
      ],

      unused:
        self.query('x', 'not_used'),
    },
}
`
	dash := `local queries = (import './queries.libsonnet').queries({});
	panels.timeSeries.simple('A', queries.one, 'about') + panels.x('B', queries.many) + queries.absent`
	frags, missing := LibsonnetQueries(dash, lib)
	want := map[string][]string{
		"one":    {"istio_build"},
		"many":   {"pilot_total_xds_internal_errors", "\n            sum(rate(pilot_xds_push_time_bucket{}[$__rate_interval])) by (le)\n          "},
		"absent": nil,
	}
	if !reflect.DeepEqual(frags, want) {
		t.Errorf("fragments\n got %q\nwant %q", frags, want)
	}
	if !reflect.DeepEqual(missing, []string{"absent"}) {
		t.Errorf("missing %v, want [absent]", missing)
	}
}
