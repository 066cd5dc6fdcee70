package authz

import (
	"fmt"
	"maps"
	"slices"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbachttp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	rbactcp "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/meshplane/istiod/pkg/protoconv"
)

// CUSTOM delegates to an extension provider. Per provider, an RBAC filter
// evaluates the CUSTOM rules as shadow rules (it never enforces them; it
// records the name of the rule that matched in its dynamic metadata) and
// the provider's ext_authz filter runs only when that name is one of the
// provider's. Rules are named istio-ext-authz-<provider>-ns[…]-policy[…]-rule[…]
// and built with DENY semantics: a rule that cannot be translated fully
// matches more, so more requests go to the provider.

// badCustomSuffix names the rules of the filter that replaces a CUSTOM pair
// whose provider cannot be used: it denies what the rules match.
const badCustomSuffix = "-deny-due-to-bad-CUSTOM-action"

// customRules are the CUSTOM rule sets by provider, sorted by provider.
type customRules struct {
	provider string
	rules    ruleSet
}

func (b *Builder) customRules(ps []policy, tcp bool, ws *warnings) []customRules {
	byProvider := map[string]*ruleSet{}
	for _, p := range ps {
		name := p.spec.GetProvider().GetName()
		rs, ok := byProvider[name]
		if !ok {
			// Both exist for every provider, as Istio: a provider with only
			// dry-run policies still has empty shadow rules.
			rs = &ruleSet{enforce: newRBAC(rbacpb.RBAC_DENY), dryRun: newRBAC(rbacpb.RBAC_DENY)}
			byProvider[name] = rs
		}
		dst := rs.enforce
		if isDryRun(p, ws) {
			dst = rs.dryRun
			// Validation rejects istio.io/dry-run on CUSTOM policies.
			ws.policy(p.ref, "istio.io/dry-run is not supported for CUSTOM policies",
				"as Istio 1.31, its rules are enforced rules of the CUSTOM RBAC filter: it denies what they match")
		}
		prefix := extAuthzPrefix + "-"
		if name != "" {
			prefix += name + "-"
		}
		b.addPolicy(dst, p, prefix, rbacpb.RBAC_DENY, tcp, ws)
	}
	out := make([]customRules, 0, len(byProvider))
	for _, name := range slices.Sorted(maps.Keys(byProvider)) {
		out = append(out, customRules{provider: name, rules: *byProvider[name]})
	}
	return out
}

// customPlan decides, per provider, the filters of CUSTOM: the provider's
// ext_authz config, or nil for a deny-all replacement.
type customPlan struct {
	customRules
	extAuthz *extAuthz // nil: replace by a filter denying the rules' matches
}

func (b *Builder) planCustom(cs []customRules, tcp bool, ws *warnings, policies []policy) []customPlan {
	out := make([]customPlan, 0, len(cs))
	if len(cs) > 1 && !b.opts.MultipleCustomProviders {
		names := make([]string, len(cs))
		for i, c := range cs {
			names[i] = c.provider
		}
		for _, p := range policies {
			ws.policy(p.ref, fmt.Sprintf("multiple CUSTOM authorization providers per workload require PILOT_ENABLE_MULTIPLE_CUSTOM_AUTHZ_PROVIDERS, found %d providers: %v", len(names), names),
				"the workload denies what its CUSTOM rules match")
		}
		for _, c := range cs {
			out = append(out, customPlan{customRules: c})
		}
		return out
	}
	for _, c := range cs {
		e, err := b.provider(c.provider)
		if err != nil {
			for _, p := range policies {
				if p.spec.GetProvider().GetName() == c.provider {
					ws.policy(p.ref, err.Error(), "the workload denies what the policy's rules match")
				}
			}
			out = append(out, customPlan{customRules: c})
			continue
		}
		if tcp && e.tcp == nil {
			for _, p := range policies {
				if p.spec.GetProvider().GetName() == c.provider {
					ws.policy(p.ref, fmt.Sprintf("provider %s is an HTTP ext_authz provider", c.provider),
						"the policy does not apply to TCP traffic")
				}
			}
			continue
		}
		out = append(out, customPlan{customRules: c, extAuthz: e})
	}
	return out
}

// provider returns the resolved provider, or why it cannot be used.
func (b *Builder) provider(name string) (*extAuthz, error) {
	e, ok := b.providers[name]
	if !ok {
		return nil, fmt.Errorf("available providers are %v but found %q", slices.Sorted(maps.Keys(b.providers)), name)
	}
	if e.err != nil {
		return nil, fmt.Errorf("found errors in provider %s: %v", name, e.err)
	}
	return e, nil
}

// denyMatches is the RBAC of a bad CUSTOM provider: deny whatever its
// enforced rules match.
func denyMatches(rules *rbacpb.RBAC) *rbacpb.RBAC {
	out := newRBAC(rbacpb.RBAC_DENY)
	for name, p := range rules.GetPolicies() {
		out.Policies[name+badCustomSuffix] = p
	}
	return out
}

// shadow is the RBAC of a CUSTOM pair: the enforced CUSTOM rules as
// shadow rules, dry-run ones (if any) as rules.
func (c customPlan) shadow() (rules, shadow *rbacpb.RBAC) {
	if len(c.rules.dryRun.GetPolicies()) > 0 {
		rules = c.rules.dryRun
	}
	return rules, c.rules.enforce
}

func (b *Builder) customHTTP(plans []customPlan) []*hcm.HttpFilter {
	var out []*hcm.HttpFilter
	for _, c := range plans {
		if c.extAuthz == nil {
			out = append(out, httpFilter(httpRBACFilter, protoconv.MessageToAny(&rbachttp.RBAC{Rules: denyMatches(c.rules.enforce)})))
			continue
		}
		rules, shadow := c.shadow()
		out = append(out,
			httpFilter(httpRBACFilter, protoconv.MessageToAny(&rbachttp.RBAC{Rules: rules, ShadowRules: shadow, ShadowRulesStatPrefix: extAuthzStatPrefix})),
			httpFilter(httpExtAuthzFilter, c.extAuthz.http))
	}
	return out
}

func (b *Builder) customTCP(plans []customPlan) []*listener.Filter {
	var out []*listener.Filter
	for _, c := range plans {
		if c.extAuthz == nil {
			out = append(out, tcpFilter(tcpRBACFilter, protoconv.MessageToAny(&rbactcp.RBAC{Rules: denyMatches(c.rules.enforce), StatPrefix: tcpStatPrefix})))
			continue
		}
		rules, shadow := c.shadow()
		out = append(out,
			tcpFilter(tcpRBACFilter, protoconv.MessageToAny(&rbactcp.RBAC{Rules: rules, ShadowRules: shadow, StatPrefix: tcpStatPrefix, ShadowRulesStatPrefix: extAuthzStatPrefix})),
			tcpFilter(tcpExtAuthzFilter, c.extAuthz.tcp))
	}
	return out
}

func httpFilter(name string, cfg *anypb.Any) *hcm.HttpFilter {
	return &hcm.HttpFilter{Name: name, ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: cfg}}
}

func tcpFilter(name string, cfg *anypb.Any) *listener.Filter {
	return &listener.Filter{Name: name, ConfigType: &listener.Filter_TypedConfig{TypedConfig: cfg}}
}
