package authz

import (
	"fmt"
	"strings"
)

// WarningKind says what a [Warning] is about.
type WarningKind int

const (
	// HTTPOnly: a rule uses an HTTP attribute on a TCP filter chain.
	HTTPOnly WarningKind = iota
	// InvalidRule: a rule, or one value of it, cannot be translated.
	InvalidRule
	// InvalidPolicy: a problem with the policy as a whole (dry-run
	// annotation, action, CUSTOM provider).
	InvalidPolicy
)

// Warning is a problem found while translating one policy. The translation
// goes on: Effect says what Envoy gets instead, as Istio 1.31 does it.
// Warnings are values; callers list them on /debug/warningz.
type Warning struct {
	Kind WarningKind
	// Policy is namespace/name.
	Policy string
	// Rule is the index of the rule in spec.rules, -1 for the policy as a
	// whole.
	Rule int
	// Field is the path of the offending field inside the rule, e.g.
	// to[0].operation.paths or when[1] (request.headers[x-internal]); empty
	// when the whole rule or policy is concerned.
	Field string
	// Reason is what is wrong; empty for HTTPOnly.
	Reason string
	// Effect is what the filter does about it.
	Effect string
	// Port is the TCP port the warning is about. The builder leaves it 0
	// (its filters are the same for every TCP chain); a caller that places
	// them on a port may set it to name the port in the message.
	Port uint32
}

// Error renders the warning as one line:
//
//	AuthorizationPolicy ns/name rule 1: field to[0].operation.paths is HTTP-only and does not apply to TCP port 9102; the condition is ignored, so the rule denies more TCP traffic
func (w Warning) Error() string {
	var b strings.Builder
	b.WriteString("AuthorizationPolicy ")
	b.WriteString(w.Policy)
	if w.Rule >= 0 {
		fmt.Fprintf(&b, " rule %d", w.Rule)
	}
	b.WriteString(": ")
	if w.Field != "" {
		b.WriteString("field ")
		b.WriteString(w.Field)
	}
	if w.Kind == HTTPOnly {
		if w.Field != "" {
			b.WriteString(" ")
		}
		b.WriteString("is HTTP-only and does not apply to TCP ")
		if w.Port != 0 {
			fmt.Fprintf(&b, "port %d", w.Port)
		} else {
			b.WriteString("traffic")
		}
	} else {
		if w.Field != "" {
			b.WriteString(": ")
		}
		b.WriteString(w.Reason)
	}
	if w.Effect != "" {
		b.WriteString("; ")
		b.WriteString(w.Effect)
	}
	return b.String()
}

// String is Error.
func (w Warning) String() string { return w.Error() }

// warnings collects the warnings of one build.
type warnings struct{ list []Warning }

func (ws *warnings) add(w Warning) { ws.list = append(ws.list, w) }

func (ws *warnings) policy(policy, reason, effect string) {
	ws.add(Warning{Kind: InvalidPolicy, Policy: policy, Rule: -1, Reason: reason, Effect: effect})
}
