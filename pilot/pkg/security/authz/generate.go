package authz

import (
	"errors"
	"fmt"

	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
)

// How a rule meets a condition it cannot translate (a bad value, an
// HTTP-only attribute on a TCP chain), as Istio 1.31:
//
//   - ALLOW: the whole rule is left out, so the policy allows less (an ALLOW
//     filter whose rules are all left out denies everything).
//   - DENY, AUDIT and CUSTOM: the value, or the whole condition, is
//     ignored, so the rule matches more: it denies, audits or sends to the
//     provider more. A rule left with nothing becomes any/any.
//
// Either way a Warning says so.

// errRuleLeftOut stops the generation of an ALLOW rule.
var errRuleLeftOut = errors.New("rule left out")

// generation translates the rules of one policy for one chain type and
// action.
type generation struct {
	tcp bool
	// strict: ALLOW semantics (see above).
	strict bool
	// widens says what the action does with what a wider rule matches
	// ("denied", "audited", …), for warnings when not strict.
	widens string
	ctx    valueCtx
	ref    string
	rule   int
	ws     *warnings
}

// fail records a problem with a condition. It returns errRuleLeftOut when
// the rule must be left out, nil when the generation goes on without the
// failing value.
func (g *generation) fail(kind WarningKind, field, reason string) error {
	w := Warning{Kind: kind, Policy: g.ref, Rule: g.rule, Field: field, Reason: reason}
	if g.strict {
		w.Effect = "the rule is left out"
		if g.tcp {
			w.Effect += " of the TCP filter"
		}
		g.ws.add(w)
		return errRuleLeftOut
	}
	what := "more"
	if kind == HTTPOnly {
		what = "more TCP traffic"
	}
	w.Effect = fmt.Sprintf("ignored, so the rule matches %s, which is %s", what, g.widens)
	g.ws.add(w)
	return nil
}

// policy generates the RBAC policy of a rule, or nil when it is left out.
func (g *generation) policy(m *ruleModel) *rbacpb.Policy {
	out := &rbacpb.Policy{}
	for _, conds := range m.permissions {
		var and []*rbacpb.Permission
		for i := range conds {
			ps, err := translate(g, &conds[i], conds[i].attr.permissionValue, conds[i].attr.permissionList, permissionOr, permissionNot)
			if err != nil {
				return nil
			}
			and = append(and, ps...)
		}
		if len(and) == 0 {
			and = []*rbacpb.Permission{permissionAny()}
		}
		out.Permissions = append(out.Permissions, permissionAnd(and))
	}
	for _, conds := range m.principals {
		var and []*rbacpb.Principal
		for i := range conds {
			ps, err := translate(g, &conds[i], conds[i].attr.principalValue, conds[i].attr.principalList, principalOr, principalNot)
			if err != nil {
				return nil
			}
			and = append(and, ps...)
		}
		if len(and) == 0 {
			and = []*rbacpb.Principal{principalAny()}
		}
		out.Principals = append(out.Principals, principalAnd(and))
	}
	return out
}

// translate turns a condition into at most two matchers: one for its
// values, the negation of one for its notValues.
func translate[T comparable](g *generation, c *condition,
	one func(valueCtx, string) (T, error), list func(valueCtx, []string) (T, error),
	or func([]T) T, not func(T) T,
) ([]T, error) {
	var out []T
	var zero T
	ctx := g.ctx
	ctx.key = c.key
	for _, negate := range []bool{false, true} {
		values, field := c.values, c.field
		if negate {
			values, field = c.notValues, c.notField
		}
		if len(values) == 0 {
			continue
		}
		if c.attr.httpOnly && g.tcp {
			if err := g.fail(HTTPOnly, field, ""); err != nil {
				return nil, err
			}
			continue
		}
		var m T
		if list != nil {
			got, err := list(ctx, values)
			if err != nil {
				if err := g.fail(InvalidRule, field, err.Error()); err != nil {
					return nil, err
				}
				continue
			}
			m = got
		} else {
			var ors []T
			for _, v := range values {
				got, err := one(ctx, v)
				if err != nil {
					if err := g.fail(InvalidRule, field, err.Error()); err != nil {
						return nil, err
					}
					continue
				}
				ors = append(ors, got)
			}
			if len(ors) > 0 {
				m = or(ors)
			}
		}
		if m == zero {
			continue
		}
		if negate {
			m = not(m)
		}
		out = append(out, m)
	}
	return out, nil
}
