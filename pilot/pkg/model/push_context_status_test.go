package model_test

import (
	"encoding/json"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pilot/pkg/model"
	"github.com/meshplane/istiod/pkg/config/schema/kind"
	"github.com/meshplane/istiod/pkg/monitoring"
)

func gaugeValue(t *testing.T, name string) float64 {
	t.Helper()
	families, err := monitoring.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("gauge %s not registered", name)
	return 0
}

func TestProblemGauges(t *testing.T) {
	e := newPCEnv(t)
	e.create(kind.VirtualService, "a", "one", 0, &networking.VirtualService{Hosts: []string{"x"}, Http: route("x")})
	e.create(kind.VirtualService, "a", "two", 1, &networking.VirtualService{Hosts: []string{"x"}, Http: route("x")})
	p := e.push()
	p.AddMetric(model.MetricConflictInboundListener, "8080", "pod.a", "conflict")
	p.UpdateMetrics()
	if got := gaugeValue(t, model.MetricDuplicatedDomains); got != 1 {
		t.Errorf("%s = %v", model.MetricDuplicatedDomains, got)
	}
	if got := gaugeValue(t, model.MetricMissingRouteHost); got != 2 {
		t.Errorf("%s = %v, want 2 (one per VirtualService)", model.MetricMissingRouteHost, got)
	}
	if got := gaugeValue(t, model.MetricConflictInboundListener); got != 1 {
		t.Errorf("%s = %v", model.MetricConflictInboundListener, got)
	}
	model.NewPushContext().UpdateMetrics()
	if got := gaugeValue(t, model.MetricDuplicatedDomains); got != 0 {
		t.Errorf("gauges must follow the current snapshot, got %v", got)
	}
	if len(model.ProblemMetricNames()) < 10 {
		t.Error("problem gauges missing")
	}
}

func TestDebugOutputs(t *testing.T) {
	e := newPCEnv(t)
	e.addService(svcHost("reviews", "a"), "a", 0)
	e.create(kind.VirtualService, "a", "vs", 0, &networking.VirtualService{Hosts: []string{"reviews"}, Http: route("reviews")})
	p := e.push()
	b, err := json.Marshal(p.SidecarScope(sidecarProxy("a", nil)))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Services     []string `json:"services"`
		Dependencies []string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &got); err != nil || len(got.Services) != 1 || len(got.Dependencies) != 2 {
		t.Errorf("scope JSON = %s (%v)", b, err)
	}
	s := p.Summary()
	if s.Services != 1 || s.VirtualServices != 1 || !s.FullRebuild || len(s.Rebuilt) != len(model.IndexNames()) {
		t.Errorf("summary = %+v", s)
	}
	if len(model.IndexKinds(model.IndexVirtualServices)) == 0 || model.IndexKinds(model.IndexRouteChecks) != nil {
		t.Error("IndexKinds")
	}
}
