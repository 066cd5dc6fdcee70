package bootstrap

import (
	"github.com/meshplane/istiod/pilot/pkg/networking/envoyfilter"
	"github.com/meshplane/istiod/pilot/pkg/security/authz"
	"github.com/meshplane/istiod/pkg/config"
	"github.com/meshplane/istiod/pkg/config/analysis"
	"github.com/meshplane/istiod/pkg/config/schema/gvk"
	"github.com/meshplane/istiod/pkg/diag"
)

// analysisProblems are the findings of the cross-object analysis of the
// stored Sidecars, Telemetries and EnvoyFilters under the current mesh
// config, for /debug/warningz (the same `istiod validate` prints).
func (s *Server) analysisProblems() []diag.Problem {
	var cfgs []config.Config
	for _, g := range []config.GroupVersionKind{gvk.Sidecar, gvk.Telemetry, gvk.EnvoyFilter} {
		cfgs = append(cfgs, s.store.List(g, "")...)
	}
	msgs := analysis.Analyze(cfgs, s.Mesh())
	out := make([]diag.Problem, 0, len(msgs))
	for _, p := range envoyfilter.Analyze(s.store.List(gvk.EnvoyFilter, "")) {
		out = append(out, p.Diag("analysis"))
	}
	// what the translation of each AuthorizationPolicy loses (Istio
	// drops it without a word)
	for _, w := range authz.New(authz.Options{Mesh: s.Mesh()}).Explain(s.store.List(gvk.AuthorizationPolicy, "")) {
		obj := "AuthorizationPolicy " + w.Policy
		out = append(out, diag.Problem{Severity: diag.Warning, Source: "policy", Subject: obj, Object: obj, Field: w.Field, Message: w.Error()})
	}
	for _, m := range msgs {
		sev := diag.Warning
		if m.Level == "Error" {
			sev = diag.Error
		}
		obj := m.Kind + " " + m.Namespace + "/" + m.Name
		out = append(out, diag.Problem{Severity: sev, Source: "analysis", Subject: obj, Object: obj, Message: "[" + m.Code + "] " + m.Text})
	}
	return out
}
