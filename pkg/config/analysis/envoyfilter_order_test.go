package analysis_test

import (
	"fmt"
	"strings"
	"testing"

	meshconfig "istio.io/api/mesh/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
	"istio.io/api/type/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/analysis"
)

// envoyFilter is an EnvoyFilter of one patch of applyTo in ctx.
func envoyFilter(priority int32, applyTo networking.EnvoyFilter_ApplyTo, ctx networking.EnvoyFilter_PatchContext,
	mod ...func(*networking.EnvoyFilter),
) *networking.EnvoyFilter {
	out := &networking.EnvoyFilter{Priority: priority, ConfigPatches: []*networking.EnvoyFilter_EnvoyConfigObjectPatch{{
		ApplyTo: applyTo,
		Match:   &networking.EnvoyFilter_EnvoyConfigObjectMatch{Context: ctx},
		Patch:   &networking.EnvoyFilter_Patch{Operation: networking.EnvoyFilter_Patch_INSERT_FIRST},
	}}}
	for _, m := range mod {
		m(out)
	}
	return out
}

func selector(labels map[string]string) func(*networking.EnvoyFilter) {
	return func(f *networking.EnvoyFilter) { f.WorkloadSelector = &networking.WorkloadSelector{Labels: labels} }
}

func targetRef(group, kind, name string) func(*networking.EnvoyFilter) {
	return func(f *networking.EnvoyFilter) {
		f.TargetRefs = append(f.TargetRefs, &v1beta1.PolicyTargetReference{Group: group, Kind: kind, Name: name})
	}
}

const orderWhy = ": Istio applies a proxy's EnvoyFilters in the order of their priority across the root and the workload " +
	"namespace (at equal priority the root namespace's first, then by creation time, then by name), not the root " +
	"namespace's first as the EnvoyFilter reference reads; give both the same priority to have "

func TestEnvoyFilterOrderCheck(t *testing.T) {
	const (
		http    = networking.EnvoyFilter_HTTP_FILTER
		out     = networking.EnvoyFilter_SIDECAR_OUTBOUND
		in      = networking.EnvoyFilter_SIDECAR_INBOUND
		anyCtx  = networking.EnvoyFilter_ANY
		gwGroup = "gateway.networking.k8s.io"
	)
	cfgs := []config.Config{
		cfg("istio-system", "base", envoyFilter(0, http, out)),
		cfg("istio-system", "web-inbound", envoyFilter(10, http, in, selector(map[string]string{"app": "web"}))),
		cfg("istio-system", "waypoints", envoyFilter(0, http, anyCtx, targetRef(gwGroup, "GatewayClass", "istio-waypoint"))),
		// a priority lower than base's: Istio applies it first
		cfg("app", "early", envoyFilter(-5, http, out)),
		// equal or higher priority: both orders agree (the root's first)
		cfg("app", "same", envoyFilter(0, http, out)),
		cfg("app", "later", envoyFilter(5, http, out)),
		// patches of another applyTo: the order changes nothing
		cfg("app", "cluster", envoyFilter(-5, networking.EnvoyFilter_CLUSTER, out)),
		// inbound: not base's context; web-inbound's for app=web only
		cfg("app", "inbound-early", envoyFilter(-5, http, in)),
		cfg("app", "web-front", envoyFilter(0, http, in, selector(map[string]string{"app": "web", "tier": "front"}))),
		cfg("app", "db", envoyFilter(0, http, anyCtx, selector(map[string]string{"app": "db"}))),
		// attached with targetRefs: a Gateway's proxies take base (by
		// selector) unless it is a waypoint, and waypoints (by class) if
		// it is one; a Service's waypoint takes waypoints only
		cfg("edge", "gw", envoyFilter(-1, http, out, targetRef(gwGroup, "Gateway", "edge"))),
		cfg("edge", "svc", envoyFilter(-1, http, anyCtx, targetRef("", "Service", "reviews"))),
		// another namespace's filter of equal priority
		cfg("other", "equal", envoyFilter(0, http, out)),
	}
	msg := func(w string, wPrio int, r string, rPrio int, scope string) string {
		return fmt.Sprintf("Warning [MP0004] (EnvoyFilter %s) EnvoyFilter %[1]s (priority %d) is applied before istio-system/%s "+
			"of the root namespace (priority %d) on %s%sistio-system/%[3]s applied first", w, wPrio, r, rPrio, scope, orderWhy)
	}
	want := strings.Join([]string{
		msg("app/early", -5, "base", 0, `the workloads of namespace "app"`),
		msg("app/inbound-early", -5, "web-inbound", 10, `the workloads of namespace "app" with labels app=web`),
		msg("app/web-front", 0, "web-inbound", 10, `the workloads of namespace "app" with labels app=web,tier=front`),
		msg("edge/gw", -1, "base", 0, "the proxies of Gateway edge/edge (unless it is a waypoint)"),
		msg("edge/gw", -1, "waypoints", 0, "the proxies of Gateway edge/edge (if it is a waypoint)"),
		msg("edge/svc", -1, "waypoints", 0, "the waypoint of Service edge/reviews"),
	}, "\n")
	if got := messages(analysis.Analyze(cfgs, &meshconfig.MeshConfig{RootNamespace: "istio-system"})); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// the root namespace is the mesh config's (istio-system when unset)
	if got := analysis.Analyze(cfgs, &meshconfig.MeshConfig{}); len(got) != 6 {
		t.Errorf("unset rootNamespace: %d messages, want 6:\n%s", len(got), messages(got))
	}
	custom := []config.Config{cfg("istio-config", "base", envoyFilter(0, http, out)), cfg("istio-system", "early", envoyFilter(-5, http, anyCtx))}
	got := messages(analysis.Analyze(custom, &meshconfig.MeshConfig{RootNamespace: "istio-config"}))
	if !strings.Contains(got, "(EnvoyFilter istio-system/early) EnvoyFilter istio-system/early (priority -5) is applied before istio-config/base ") ||
		strings.Count(got, "\n") != 0 {
		t.Errorf("rootNamespace istio-config: %s", got)
	}
}
