package envoyfilter

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/meshplane/istiod/pkg/diag"
)

// Problem is one finding about one EnvoyFilter, or one patch of it.
type Problem struct {
	// Severity is diag.Error for what Istio rejects or what cannot apply,
	// diag.Warning otherwise.
	Severity diag.Severity `json:"severity"`
	// Code is the istioctl analyze code (IST0151, ...) of an analysis
	// message, empty for the others.
	Code string `json:"code,omitempty"`
	// Namespace and Name name the EnvoyFilter.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Patch is the index of the patch in spec.configPatches, -1 when the
	// problem is about the whole object.
	Patch int `json:"patch"`
	// Resource names the generated resource the patch was not applied to
	// ("listener 0.0.0.0_9080"), empty when the problem is the patch's own.
	Resource string `json:"resource,omitempty"`
	Message  string `json:"message"`
}

// Object names the EnvoyFilter as /debug/warningz does.
func (p Problem) Object() string { return "EnvoyFilter " + p.Namespace + "/" + p.Name }

// Field is the path of the patch ("spec.configPatches[2]"), empty for the
// whole object.
func (p Problem) Field() string {
	if p.Patch < 0 {
		return ""
	}
	return "spec.configPatches[" + strconv.Itoa(p.Patch) + "]"
}

// String is the problem on one line: object, field, resource, message.
func (p Problem) String() string {
	s := p.Object()
	if f := p.Field(); f != "" {
		s += " " + f
	}
	if p.Resource != "" {
		s += " on " + p.Resource
	}
	msg := p.Message
	if p.Code != "" {
		msg = "[" + p.Code + "] " + msg
	}
	return s + ": " + msg
}

// Diag is the problem as the problem board lists it; source is the
// reporter ("envoyfilter", "analysis").
func (p Problem) Diag(source string) diag.Problem {
	msg := p.Message
	if p.Code != "" {
		msg = p.Code + " " + msg
	}
	if p.Resource != "" {
		msg += " (" + p.Resource + ")"
	}
	return diag.Problem{Severity: p.Severity, Source: source, Subject: p.Object(), Object: p.Object(),
		Field: p.Field(), Message: msg}
}

// sortProblems orders problems by filter, patch, resource, then message.
func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Patch, b.Patch),
			cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Code, b.Code), cmp.Compare(a.Message, b.Message))
	})
}
