package version_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/meshplane/istiod/pkg/monitoring"
	"github.com/meshplane/istiod/pkg/version"
)

// istio_build is exported as Istio's pkg/version exports it: a gauge at 1,
// labelled component and tag, once the component has recorded itself.
func TestRecordComponentBuildTag(t *testing.T) {
	if s := buildSamples(t); len(s) != 0 {
		t.Fatalf("istio_build has series before any component recorded itself: %v", s)
	}
	version.RecordComponentBuildTag("pilot")
	version.RecordComponentBuildTag("pilot") // idempotent: still one series at 1
	s := buildSamples(t)
	if len(s) != 1 {
		t.Fatalf("istio_build series %v, want one", s)
	}
	m := s[0]
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if len(labels) != 2 || labels["component"] != "pilot" || labels["tag"] != version.Version {
		t.Errorf("labels %v, want component=pilot tag=%s", labels, version.Version)
	}
	if m.GetGauge().GetValue() != 1 {
		t.Errorf("value %v, want 1", m.GetGauge().GetValue())
	}
}

func buildSamples(t *testing.T) []*dto.Metric {
	t.Helper()
	fams, err := monitoring.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "istio_build" {
			if f.GetType() != dto.MetricType_GAUGE {
				t.Fatalf("istio_build is a %v, want a gauge", f.GetType())
			}
			return f.GetMetric()
		}
	}
	return nil
}
