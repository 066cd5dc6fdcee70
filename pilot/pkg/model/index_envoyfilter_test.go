package model_test

import (
	"slices"
	"testing"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshplane/istiod/pkg/config/schema/kind"
)

// The EnvoyFilters of one proxy come in Istio 1.31's order
// (PushContext.EnvoyFilters): priority across the root and the workload
// namespace; at equal priority the root namespace first; then creation
// time; then name.
func TestEnvoyFilterOrder(t *testing.T) {
	e := newPCEnv(t)
	ef := func(prio int32, labels map[string]string) *networking.EnvoyFilter {
		out := &networking.EnvoyFilter{Priority: prio}
		if labels != nil {
			out.WorkloadSelector = &networking.WorkloadSelector{Labels: labels}
		}
		return out
	}
	// Workload namespace: creation time and name break priority ties.
	e.create(kind.EnvoyFilter, "app", "b-late", 5, ef(0, nil))
	e.create(kind.EnvoyFilter, "app", "a-same-time", 1, ef(0, nil))
	e.create(kind.EnvoyFilter, "app", "b-same-time", 1, ef(0, nil))
	e.create(kind.EnvoyFilter, "app", "negative", 9, ef(-5, nil))
	e.create(kind.EnvoyFilter, "app", "not-selected", 0, ef(0, map[string]string{"app": "other"}))
	e.create(kind.EnvoyFilter, "app", "selected", 0, ef(10, map[string]string{"app": "web"}))
	// Root namespace: before the workload's only at equal priority, even
	// when younger.
	e.create(kind.EnvoyFilter, "istio-system", "root-high", 0, ef(100, nil))
	e.create(kind.EnvoyFilter, "istio-system", "root-low", 3, ef(-100, nil))
	e.create(kind.EnvoyFilter, "istio-system", "root-default", 20, ef(0, nil))
	e.create(kind.EnvoyFilter, "other", "elsewhere", 0, ef(0, nil))
	p := e.push()

	var got []string
	for _, w := range p.EnvoyFilters(sidecarProxy("app", map[string]string{"app": "web"})) {
		got = append(got, w.Config.Namespace+"/"+w.Config.Name)
	}
	want := []string{
		"istio-system/root-low",
		"app/negative", // priority -5: before the root's priority 0
		"istio-system/root-default",
		"app/a-same-time", "app/b-same-time", "app/b-late",
		"app/selected",
		"istio-system/root-high",
	}
	if !slices.Equal(got, want) {
		t.Errorf("order = %v\nwant    %v", got, want)
	}
	if n := len(p.EnvoyFilters(sidecarProxy("istio-system", nil))); n != 3 {
		t.Errorf("a root-namespace proxy gets the root filters once, got %d", n)
	}
}

// A workload filter of priority -5 runs before a root filter of priority
// 0 (the reference's "root namespace first" would put it after).
func TestEnvoyFilterOrderWorkloadBeforeRoot(t *testing.T) {
	e := newPCEnv(t)
	e.create(kind.EnvoyFilter, "istio-system", "root", 0, &networking.EnvoyFilter{})
	e.create(kind.EnvoyFilter, "app", "early", 10, &networking.EnvoyFilter{Priority: -5})
	var got []string
	for _, w := range e.push().EnvoyFilters(sidecarProxy("app", nil)) {
		got = append(got, w.Config.Namespace+"/"+w.Config.Name)
	}
	if want := []string{"app/early", "istio-system/root"}; !slices.Equal(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
}
