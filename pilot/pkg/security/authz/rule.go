package authz

import (
	"fmt"

	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	authzpb "istio.io/api/security/v1beta1"
)

// An attribute is one thing a rule can test (a source field, an operation
// field or a when key) and how its values become Envoy matchers.
// Exactly one of the four translation functions is set: the ...Value ones
// translate each value on its own and the values are ORed; the ...List ones
// translate the values together (one metadata matcher ORing them).
type attribute struct {
	// principal: the attribute is about the peer or the request's
	// credentials (RBAC principals); otherwise about the destination or the
	// request (permissions).
	principal bool
	// httpOnly: the attribute needs HTTP; it does not exist on a TCP chain.
	httpOnly bool
	// aliases says how the mesh's trust domain aliases rewrite values.
	aliases aliasMode

	permissionValue func(c valueCtx, v string) (*rbacpb.Permission, error)
	permissionList  func(c valueCtx, vs []string) (*rbacpb.Permission, error)
	principalValue  func(c valueCtx, v string) (*rbacpb.Principal, error)
	principalList   func(c valueCtx, vs []string) (*rbacpb.Principal, error)
}

// valueCtx is what a translation function may need besides the values.
type valueCtx struct {
	// key is the when key (request.headers[x-user]), or for a source or
	// operation field the key of the equivalent condition.
	key string
	// namespace is the policy's namespace (service accounts without one).
	namespace string
	// filterState: match peer identities in filter state (see Options).
	filterState bool
}

// condition is one attribute of a rule with its values and notValues.
type condition struct {
	attr              *attribute
	key               string
	values, notValues []string
	// field and notField name the values and notValues in the policy, for
	// warnings.
	field, notField string
}

// ruleModel is one rule, its conditions grouped as Envoy wants them: one
// permission per to[] entry and one principal per from[] entry (a single
// one when the rule has none), each the AND of its conditions; the when
// conditions are added to every one of them, after the entry's own.
type ruleModel struct {
	permissions [][]condition
	principals  [][]condition
}

// ruleError is a rule Istio cannot read at all (an unknown when key).
type ruleError struct{ field, reason string }

// compileRule reads a rule. The trust domains rewrite principals and trust
// domains (applied once per condition).
func compileRule(r *authzpb.Rule, td trustDomains) (*ruleModel, *ruleError) {
	var whenPermissions, whenPrincipals []condition
	for i, w := range r.GetWhen() {
		a := whenAttribute(w.GetKey())
		if a == nil {
			return nil, &ruleError{field: fmt.Sprintf("when[%d]", i), reason: fmt.Sprintf("unknown attribute %s", w.GetKey())}
		}
		if len(w.GetValues()) == 0 && len(w.GetNotValues()) == 0 {
			continue
		}
		c := condition{
			attr: a, key: w.GetKey(), values: w.GetValues(), notValues: w.GetNotValues(),
			field:    fmt.Sprintf("when[%d].values (%s)", i, w.GetKey()),
			notField: fmt.Sprintf("when[%d].notValues (%s)", i, w.GetKey()),
		}
		if a.principal {
			whenPrincipals = append(whenPrincipals, c)
		} else {
			whenPermissions = append(whenPermissions, c)
		}
	}

	td.rewrite(whenPrincipals)

	m := &ruleModel{}
	for i, from := range r.GetFrom() {
		sources := sourceConditions(i, from.GetSource())
		td.rewrite(sources)
		m.principals = append(m.principals, concat(sources, whenPrincipals))
	}
	if len(r.GetFrom()) == 0 {
		m.principals = append(m.principals, whenPrincipals)
	}
	for i, to := range r.GetTo() {
		m.permissions = append(m.permissions, concat(operationConditions(i, to.GetOperation()), whenPermissions))
	}
	if len(r.GetTo()) == 0 {
		m.permissions = append(m.permissions, whenPermissions)
	}
	return m, nil
}

func concat(a, b []condition) []condition {
	out := make([]condition, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}
