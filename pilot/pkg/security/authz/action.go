package authz

import (
	"fmt"
	"strconv"

	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	authzpb "istio.io/api/security/v1beta1"

	"github.com/meshplane/istiod/pkg/config"
)

// Stat prefixes of the RBAC filters.
const (
	dryRunAllowStatPrefix = "istio_dry_run_allow_"
	dryRunDenyStatPrefix  = "istio_dry_run_deny_"
	extAuthzStatPrefix    = "istio_ext_authz_"
	tcpStatPrefix         = "tcp."
)

// dryRunAnnotation puts a policy in the shadow rules: evaluated, counted
// and logged, not enforced.
const dryRunAnnotation = "istio.io/dry-run"

// policy is one AuthorizationPolicy being translated.
type policy struct {
	cfg  *config.Config
	spec *authzpb.AuthorizationPolicy
	// ref is namespace/name.
	ref string
}

// ruleSet is the RBAC of one action (or one CUSTOM provider): the rules of
// enforced policies and those of dry-run policies. Either is nil when no
// policy of its kind exists.
type ruleSet struct {
	enforce, dryRun *rbacpb.RBAC
}

func newRBAC(action rbacpb.RBAC_Action) *rbacpb.RBAC {
	return &rbacpb.RBAC{Action: action, Policies: map[string]*rbacpb.Policy{}}
}

// shadowStatPrefix is the stat prefix for shadow rules of an action. With
// no shadow rules Istio still sets the ALLOW one (the action of a nil RBAC
// reads as ALLOW).
func shadowStatPrefix(shadow *rbacpb.RBAC) string {
	switch shadow.GetAction() {
	case rbacpb.RBAC_ALLOW:
		return dryRunAllowStatPrefix
	case rbacpb.RBAC_DENY:
		return dryRunDenyStatPrefix
	}
	return ""
}

// localRules builds the rule set of the ALLOW, DENY or AUDIT (LOG)
// policies; nil without policies.
func (b *Builder) localRules(ps []policy, action rbacpb.RBAC_Action, tcp bool, ws *warnings) *ruleSet {
	if len(ps) == 0 {
		return nil
	}
	rs := &ruleSet{}
	for _, p := range ps {
		dst := &rs.enforce
		if isDryRun(p, ws) {
			dst = &rs.dryRun
		}
		if *dst == nil {
			*dst = newRBAC(action)
		}
		b.addPolicy(*dst, p, "", action, tcp, ws)
	}
	return rs
}

// addPolicy adds the RBAC policies of p's rules to dst, named
// <prefix>ns[<namespace>]-policy[<name>]-rule[<index>].
func (b *Builder) addPolicy(dst *rbacpb.RBAC, p policy, prefix string, action rbacpb.RBAC_Action, tcp bool, ws *warnings) {
	g := &generation{
		tcp:    tcp,
		strict: action == rbacpb.RBAC_ALLOW,
		widens: widens(p.spec.GetAction()),
		ctx:    valueCtx{namespace: p.cfg.Namespace, filterState: b.opts.PeerPrincipalFromFilterState},
		ref:    p.ref,
		ws:     ws,
	}
	for i, r := range p.spec.GetRules() {
		name := policyName(prefix, p.cfg.Namespace, p.cfg.Name, i)
		if r == nil {
			ws.add(Warning{Kind: InvalidRule, Policy: p.ref, Rule: i, Reason: "empty rule", Effect: "the rule is left out"})
			continue
		}
		m, rerr := compileRule(r, b.trustDomains)
		if rerr != nil {
			ws.add(Warning{Kind: InvalidRule, Policy: p.ref, Rule: i, Field: rerr.field, Reason: rerr.reason, Effect: "the rule is left out"})
			continue
		}
		g.rule = i
		if rp := g.policy(m); rp != nil {
			dst.Policies[name] = rp
		}
	}
	if len(p.spec.GetRules()) == 0 {
		dst.Policies[policyName(prefix, p.cfg.Namespace, p.cfg.Name, 0)] = matchNever()
	}
}

func policyName(prefix, namespace, name string, rule int) string {
	return fmt.Sprintf("%sns[%s]-policy[%s]-rule[%d]", prefix, namespace, name, rule)
}

// widens says what the action does with what a rule matches, for warnings.
func widens(a authzpb.AuthorizationPolicy_Action) string {
	switch a {
	case authzpb.AuthorizationPolicy_DENY:
		return "denied"
	case authzpb.AuthorizationPolicy_AUDIT:
		return "audited"
	case authzpb.AuthorizationPolicy_CUSTOM:
		return "checked by the CUSTOM provider"
	}
	return "allowed"
}

// isDryRun reads the istio.io/dry-run annotation; a value that is not a
// boolean is a warning and means false.
func isDryRun(p policy, ws *warnings) bool {
	v, ok := p.cfg.Annotations[dryRunAnnotation]
	if !ok {
		return false
	}
	dry, err := strconv.ParseBool(v)
	if err != nil {
		ws.policy(p.ref, fmt.Sprintf("invalid %s value %q", dryRunAnnotation, v), "the policy is enforced")
		return false
	}
	return dry
}
